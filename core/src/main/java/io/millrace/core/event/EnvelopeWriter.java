package io.millrace.core.event;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.io.SerializedString;
import com.fasterxml.jackson.core.util.ByteArrayBuilder;
import io.millrace.core.Lsn;
import io.millrace.core.MillraceException;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Op;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.SchemaChange;
import io.millrace.core.types.UnchangedToast;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.time.Clock;
import java.time.Instant;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;

/**
 * Writes change events as Debezium-compatible JSON: the value (the envelope, as Kafka Connect's
 * JsonConverter writes it with {@code schemas.enable=false}) and the key (the replica identity
 * columns). docs/EVENTS.md describes every field, with examples and the differences from Debezium.
 *
 * <pre>{@code
 * {"before":null,"after":{"id":1,"name":"a"},
 *  "source":{"version":"0.1.0","connector":"postgresql","name":"shop","ts_ms":1700000000123,
 *            "snapshot":"false","db":"shop","sequence":"[null,\"23456784\"]","ts_us":1700000000123456,
 *            "ts_ns":1700000000123456000,"schema":"public","table":"orders","txId":770,"lsn":23456784,
 *            "xmin":null,"commit_lsn":23456900,"ordinal":1,"table_oid":16385},
 *  "transaction":null,"op":"c","ts_ms":1700000000200,"ts_us":1700000000200123,"ts_ns":1700000000200123000}
 * }</pre>
 *
 * <p>Column values go through the column's codec ({@link io.millrace.core.types.TypeCodec#writeJson});
 * SQL NULL is JSON {@code null}; an unchanged TOASTed value takes the old image's value when the event has
 * one (REPLICA IDENTITY FULL, or a key column), else it is the string {@value #UNAVAILABLE_VALUE}, Debezium's
 * default placeholder, never a made-up value.
 *
 * <p>This is a hot path: it uses the streaming generator only (no tree, no per-event strings) and caches
 * the encoded column names per relation. Not thread-safe: each writer thread owns its own instance
 * (they are cheap).
 */
public final class EnvelopeWriter {
    /** Debezium's default {@code unavailable.value.placeholder}: an unchanged TOASTed column. */
    public static final String UNAVAILABLE_VALUE = "__debezium_unavailable_value";

    /** The Millrace version written as {@code source.version}. */
    public static final String VERSION = readVersion();

    private static final JsonFactory FACTORY = JsonFactory.builder().build();
    private static final int CACHE_LIMIT = 4096;

    // Field names, encoded once.
    private static final SerializedString BEFORE = new SerializedString("before");
    private static final SerializedString AFTER = new SerializedString("after");
    private static final SerializedString SOURCE = new SerializedString("source");
    private static final SerializedString TRANSACTION = new SerializedString("transaction");
    private static final SerializedString OP = new SerializedString("op");
    private static final SerializedString TS_MS = new SerializedString("ts_ms");
    private static final SerializedString TS_US = new SerializedString("ts_us");
    private static final SerializedString TS_NS = new SerializedString("ts_ns");
    private static final SerializedString F_VERSION = new SerializedString("version");
    private static final SerializedString F_CONNECTOR = new SerializedString("connector");
    private static final SerializedString F_NAME = new SerializedString("name");
    private static final SerializedString F_SNAPSHOT = new SerializedString("snapshot");
    private static final SerializedString F_DB = new SerializedString("db");
    private static final SerializedString F_SEQUENCE = new SerializedString("sequence");
    private static final SerializedString F_SCHEMA = new SerializedString("schema");
    private static final SerializedString F_TABLE = new SerializedString("table");
    private static final SerializedString F_TXID = new SerializedString("txId");
    private static final SerializedString F_LSN = new SerializedString("lsn");
    private static final SerializedString F_XMIN = new SerializedString("xmin");
    private static final SerializedString F_COMMIT_LSN = new SerializedString("commit_lsn");
    private static final SerializedString F_ORDINAL = new SerializedString("ordinal");
    private static final SerializedString F_TABLE_OID = new SerializedString("table_oid");
    private static final SerializedString V_POSTGRESQL = new SerializedString("postgresql");
    private static final SerializedString V_TRUE = new SerializedString("true");
    private static final SerializedString V_FALSE = new SerializedString("false");
    /** Debezium's value for rows of an incremental snapshot; Millrace's online snapshot rows have a stream position. */
    private static final SerializedString V_INCREMENTAL = new SerializedString("incremental");
    private static final SerializedString V_UNAVAILABLE = new SerializedString(UNAVAILABLE_VALUE);
    private static final SerializedString[] OP_CODES = opCodes();
    private static final char[] SEQUENCE_PREFIX = "[null,\"".toCharArray();

    private final SerializedString version;
    private final SerializedString name;
    private final SerializedString database;
    private final Clock clock;

    // Owned by the calling thread (see class comment).
    private final Map<RelationInfo, Names> names = new IdentityHashMap<>();
    private Names lastNames;
    private final char[] sequence = new char[SEQUENCE_PREFIX.length + 20 + 2];

    public EnvelopeWriter(SourceMeta meta) {
        this(meta, Clock.systemUTC(), VERSION);
    }

    /**
     * @param clock   gives the top-level {@code ts_ms} (when the event was written)
     * @param version written as {@code source.version}
     */
    public EnvelopeWriter(SourceMeta meta, Clock clock, String version) {
        Objects.requireNonNull(meta, "meta");
        this.name = new SerializedString(meta.name());
        this.database = new SerializedString(meta.database());
        this.clock = Objects.requireNonNull(clock, "clock");
        this.version = new SerializedString(Objects.requireNonNull(version, "version"));
        System.arraycopy(SEQUENCE_PREFIX, 0, sequence, 0, SEQUENCE_PREFIX.length);
    }

    /**
     * A writer of the same events (the same source meta, clock and version), with caches of its own: for another
     * thread that encodes events in parallel (each thread owns one; see the class comment).
     */
    public EnvelopeWriter copy() {
        return new EnvelopeWriter(new SourceMeta(name.getValue(), database.getValue()), clock, version.getValue());
    }

    /**
     * Writes the event's value, the envelope, as one JSON object.
     *
     * @throws UncheckedIOException when the generator's target fails
     * @throws MillraceException    (INTERNAL) when a row image does not fit its relation or a codec
     *                              cannot write a value; the message names table and column
     */
    public void writeValue(JsonGenerator gen, ChangeEvent e) {
        try {
            RelationInfo rel = e.relation();
            Names n = names(rel);
            gen.writeStartObject();
            gen.writeFieldName(BEFORE);
            writeRow(gen, rel, n, e.before(), null);
            gen.writeFieldName(AFTER);
            writeRow(gen, rel, n, e.after(), e.before());

            sourceHead(gen);
            long micros = e.commitTimeMicros();
            gen.writeFieldName(TS_MS);
            gen.writeNumber(Math.floorDiv(micros, 1000L));
            gen.writeFieldName(F_SNAPSHOT);
            gen.writeString(!e.snapshot() ? V_FALSE : e.position().commitLsn().equals(io.millrace.core.Lsn.ZERO) ? V_TRUE : V_INCREMENTAL);
            gen.writeFieldName(F_DB);
            gen.writeString(database);
            gen.writeFieldName(F_SEQUENCE);
            writeSequence(gen, e.lsn());
            gen.writeFieldName(TS_US);
            gen.writeNumber(micros);
            gen.writeFieldName(TS_NS);
            gen.writeNumber(micros * 1000L);
            gen.writeFieldName(F_SCHEMA);
            gen.writeString(n.schema);
            gen.writeFieldName(F_TABLE);
            gen.writeString(n.table);
            gen.writeFieldName(F_TXID);
            if (e.xid() == 0) {
                gen.writeNull(); // InvalidTransactionId: snapshot rows carry no source transaction
            } else {
                gen.writeNumber(e.xid());
            }
            gen.writeFieldName(F_LSN);
            writeLsn(gen, e.lsn());
            gen.writeFieldName(F_XMIN);
            gen.writeNull();
            gen.writeFieldName(F_COMMIT_LSN);
            writeLsn(gen, e.position().commitLsn());
            gen.writeFieldName(F_ORDINAL);
            gen.writeNumber(e.position().ordinal());
            gen.writeFieldName(F_TABLE_OID);
            gen.writeNumber(Integer.toUnsignedLong(e.relation().oid()));
            gen.writeEndObject();

            gen.writeFieldName(TRANSACTION);
            gen.writeNull();
            gen.writeFieldName(OP);
            gen.writeString(OP_CODES[e.op().ordinal()]);
            Instant now = clock.instant();
            long nowSeconds = now.getEpochSecond();
            int nowNanos = now.getNano();
            gen.writeFieldName(TS_MS);
            gen.writeNumber(nowSeconds * 1000L + nowNanos / 1_000_000);
            gen.writeFieldName(TS_US);
            gen.writeNumber(nowSeconds * 1_000_000L + nowNanos / 1_000);
            gen.writeFieldName(TS_NS);
            gen.writeNumber(nowSeconds * 1_000_000_000L + nowNanos);
            gen.writeEndObject();
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /**
     * Writes the event's key: {@code {"<key column>": value, ...}} from the replica identity columns of
     * {@code after} ({@code before} for deletes), or JSON {@code null} when the table has no key or the
     * event is a truncate.
     */
    public void writeKey(JsonGenerator gen, ChangeEvent e) {
        try {
            RelationInfo rel = e.relation();
            Object[] row = e.op() == Op.DELETE ? e.before() : e.after();
            if (row == null && e.op() != Op.TRUNCATE) {
                row = e.before();
            }
            if (!rel.hasKey() || e.op() == Op.TRUNCATE || row == null) {
                gen.writeNull();
                return;
            }
            Names n = names(rel);
            checkWidth(rel, row);
            Object[] other = row == e.after() ? e.before() : null;
            gen.writeStartObject();
            for (int i : n.keys) {
                Object v = row[i];
                if (v == UnchangedToast.INSTANCE && other != null && other[i] != null && other[i] != UnchangedToast.INSTANCE) {
                    v = other[i]; // an unchanged TOASTed key column: the old image has the value
                }
                gen.writeFieldName(n.columns[i]);
                writeColumn(gen, rel, i, v);
            }
            gen.writeEndObject();
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /**
     * Writes the schema-change event of {@code c}, written before {@code e}, the first change in the new shape (or the
     * truncate that stands for a drop): its position, the DDL, and the table's columns after it (docs/EVENTS.md).
     */
    public void writeSchemaChange(JsonGenerator gen, SchemaChange c, ChangeEvent e) {
        try {
            RelationInfo rel = e.relation();
            gen.writeStartObject();
            sourceHead(gen);
            gen.writeFieldName(TS_MS);
            gen.writeNumber(Math.floorDiv(e.commitTimeMicros(), 1000L));
            gen.writeFieldName(F_DB);
            gen.writeString(database);
            gen.writeFieldName(F_SCHEMA);
            gen.writeString(c.table().schema());
            gen.writeFieldName(F_TABLE);
            gen.writeString(c.table().table());
            gen.writeFieldName(F_TXID);
            gen.writeNumber(e.xid());
            gen.writeFieldName(F_LSN);
            writeLsn(gen, e.lsn());
            gen.writeFieldName(F_COMMIT_LSN);
            writeLsn(gen, e.position().commitLsn());
            gen.writeFieldName(F_ORDINAL);
            gen.writeNumber(e.position().ordinal());
            gen.writeFieldName(F_TABLE_OID);
            gen.writeNumber(Integer.toUnsignedLong(c.oid()));
            gen.writeEndObject();
            gen.writeStringField("databaseName", database.getValue());
            gen.writeStringField("schemaName", c.table().schema());
            gen.writeStringField("tableName", c.table().table());
            gen.writeBooleanField("exact", c.exact());
            gen.writeStringField("command", c.command());
            gen.writeStringField("ddl", c.ddl());
            gen.writeArrayFieldStart("tableChanges");
            gen.writeStartObject();
            gen.writeStringField("type", c.dropped() ? "DROP" : c.command() != null && c.command().startsWith("CREATE") ? "CREATE" : "ALTER");
            gen.writeStringField("id", c.table().sql());
            gen.writeStringField("previousId", c.oldTable() == null || c.oldTable().equals(c.table()) ? null : c.oldTable().sql());
            gen.writeObjectFieldStart("table");
            gen.writeArrayFieldStart("primaryKeyColumnNames");
            if (!c.dropped()) {
                for (int k : rel.keyIndexes()) {
                    gen.writeString(rel.column(k).name());
                }
            }
            gen.writeEndArray();
            gen.writeArrayFieldStart("columns");
            int position = 0;
            for (SchemaChange.Column col : c.columns()) {
                gen.writeStartObject();
                gen.writeStringField("name", col.name());
                gen.writeStringField("typeName", col.type());
                gen.writeNumberField("position", ++position);
                gen.writeBooleanField("optional", !col.notNull());
                String was = c.before() == null ? null : c.before().get(col.attnum());
                gen.writeStringField("previousName", was == null || was.equals(col.name()) ? null : was);
                boolean added = c.before() != null && was == null;
                gen.writeBooleanField("added", added);
                if (added && col.missing()) {
                    // the value the rows written before it have (ADD COLUMN ... DEFAULT <constant>): PostgreSQL writes no change
                    // for them, and a consumer had no way to know it (found by a soak into jsonl of a keyless table)
                    gen.writeStringField("existingRowsValue", col.value());
                }
                gen.writeEndObject();
            }
            gen.writeEndArray();
            gen.writeEndObject();
            gen.writeEndObject();
            gen.writeEndArray();
            Instant now = clock.instant();
            gen.writeNumberField("ts_ms", now.toEpochMilli());
            gen.writeEndObject();
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /** Opens {@code source} with the fields every event starts it with: version, connector, name. */
    private void sourceHead(JsonGenerator gen) throws IOException {
        gen.writeFieldName(SOURCE);
        gen.writeStartObject();
        gen.writeFieldName(F_VERSION);
        gen.writeString(version);
        gen.writeFieldName(F_CONNECTOR);
        gen.writeString(V_POSTGRESQL);
        gen.writeFieldName(F_NAME);
        gen.writeString(name);
    }

    /** {@link #writeSchemaChange} as UTF-8 bytes. */
    public byte[] schemaChangeBytes(SchemaChange c, ChangeEvent e) {
        ByteArrayBuilder out = new ByteArrayBuilder(512);
        try (JsonGenerator gen = FACTORY.createGenerator(out)) {
            writeSchemaChange(gen, c, e);
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
        return out.toByteArray();
    }

    /** The value as UTF-8 bytes (a convenience; sinks with a stream use {@link #writeValue}). */
    public byte[] valueBytes(ChangeEvent e) {
        ByteArrayBuilder out = new ByteArrayBuilder(512);
        try (JsonGenerator gen = FACTORY.createGenerator(out)) {
            writeValue(gen, e);
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
        return out.toByteArray();
    }

    /** The key as UTF-8 bytes ({@code null} JSON when the table has no key). */
    public byte[] keyBytes(ChangeEvent e) {
        ByteArrayBuilder out = new ByteArrayBuilder(64);
        try (JsonGenerator gen = FACTORY.createGenerator(out)) {
            writeKey(gen, e);
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
        return out.toByteArray();
    }

    /**
     * Writes a row image. An unchanged TOASTed value of {@code row} takes the value {@code old} holds for the column,
     * as Debezium does: under REPLICA IDENTITY FULL the old image is whole (PostgreSQL logs it with its TOASTed values),
     * and a key column is in the old key. Only where no old value was sent does the placeholder stay.
     */
    private void writeRow(JsonGenerator gen, RelationInfo rel, Names n, Object[] row, Object[] old) throws IOException {
        if (row == null) {
            gen.writeNull();
            return;
        }
        checkWidth(rel, row);
        if (old != null) {
            checkWidth(rel, old);
        }
        gen.writeStartObject();
        SerializedString[] cols = n.columns;
        for (int i = 0; i < row.length; i++) {
            Object v = row[i];
            if (v == UnchangedToast.INSTANCE && old != null && old[i] != null && old[i] != UnchangedToast.INSTANCE) {
                v = old[i];
            }
            gen.writeFieldName(cols[i]);
            writeColumn(gen, rel, i, v);
        }
        gen.writeEndObject();
    }

    private static void writeColumn(JsonGenerator gen, RelationInfo rel, int i, Object v) throws IOException {
        if (v == null) {
            gen.writeNull();
        } else if (v == UnchangedToast.INSTANCE) {
            gen.writeString(V_UNAVAILABLE);
        } else {
            try {
                rel.codec(i).writeJson(gen, v);
            } catch (RuntimeException ex) {
                throw new MillraceException(MillraceException.Kind.INTERNAL, "cannot write column '" + rel.column(i).name()
                        + "' of table " + rel.table() + " (type " + rel.codec(i).typeName() + ") as JSON: the decoded value is a "
                        + v.getClass().getName() + " (" + ex.getMessage() + ")", ex);
            }
        }
    }

    private static void checkWidth(RelationInfo rel, Object[] row) {
        if (row.length != rel.columnCount()) {
            throw new MillraceException(MillraceException.Kind.INTERNAL, "row image of table " + rel.table() + " has "
                    + row.length + " values but the relation has " + rel.columnCount() + " columns");
        }
    }

    /** {@code [null,"<lsn as decimal>"]} as a JSON string, as Debezium writes {@code source.sequence}. */
    private void writeSequence(JsonGenerator gen, Lsn lsn) throws IOException {
        char[] buf = sequence;
        int p = SEQUENCE_PREFIX.length;
        long v = lsn.value();
        if (v < 0) {
            String s = Long.toUnsignedString(v);
            s.getChars(0, s.length(), buf, p);
            p += s.length();
        } else {
            int digits = 1;
            for (long t = v / 10; t != 0; t /= 10) {
                digits++;
            }
            for (int i = p + digits - 1; i >= p; i--) {
                buf[i] = (char) ('0' + (v % 10));
                v /= 10;
            }
            p += digits;
        }
        buf[p++] = '"';
        buf[p++] = ']';
        gen.writeString(buf, 0, p);
    }

    private static void writeLsn(JsonGenerator gen, Lsn lsn) throws IOException {
        long v = lsn.value();
        if (v >= 0) {
            gen.writeNumber(v);
        } else {
            gen.writeNumber(new BigInteger(Long.toUnsignedString(v))); // LSNs past 2^63: never seen, still exact
        }
    }

    private Names names(RelationInfo rel) {
        Names n = lastNames;
        if (n != null && n.relation == rel) {
            return n;
        }
        n = names.get(rel);
        if (n == null) {
            if (names.size() >= CACHE_LIMIT) {
                names.clear(); // relations replaced by schema changes would otherwise stay reachable
            }
            n = new Names(rel);
            names.put(rel, n);
        }
        lastNames = n;
        return n;
    }

    /** Encoded names of one relation. */
    private static final class Names {
        final RelationInfo relation;
        final SerializedString[] columns;
        final SerializedString schema;
        final SerializedString table;
        final int[] keys;

        Names(RelationInfo rel) {
            relation = rel;
            columns = new SerializedString[rel.columnCount()];
            for (int i = 0; i < columns.length; i++) {
                columns[i] = new SerializedString(rel.column(i).name());
            }
            // the source block names the table in the source, as Debezium's after its topic router: a transform's rename
            // moves the table in the destinations (its topic, its table) but the event still says where it came from
            schema = new SerializedString(rel.sourceTable().schema());
            table = new SerializedString(rel.sourceTable().table());
            keys = rel.keyIndexes();
        }
    }

    private static SerializedString[] opCodes() {
        Op[] ops = Op.values();
        SerializedString[] codes = new SerializedString[ops.length];
        for (Op op : ops) {
            codes[op.ordinal()] = new SerializedString(op.code());
        }
        return codes;
    }

    /**
     * The version of the millrace-core artifact as Maven recorded it in the jar
     * ({@code META-INF/maven/.../pom.properties}), or the jar manifest's; {@code unknown} when run from
     * unpackaged classes (a build's own unit tests).
     */
    private static String readVersion() {
        try (InputStream in = EnvelopeWriter.class.getResourceAsStream("/META-INF/maven/io.millrace/millrace-core/pom.properties")) {
            if (in != null) {
                Properties p = new Properties();
                p.load(in);
                String v = p.getProperty("version");
                if (v != null && !v.isBlank()) {
                    return v.strip();
                }
            }
        } catch (IOException ignored) {
            // fall through to the manifest
        }
        String v = EnvelopeWriter.class.getPackage().getImplementationVersion();
        return v != null ? v : "unknown";
    }
}

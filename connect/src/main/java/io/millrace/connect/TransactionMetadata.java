package io.millrace.connect;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.millrace.core.Lsn;
import io.millrace.core.change.ChangeEvent;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Debezium's transaction metadata ({@code provide.transaction.metadata=true}): a BEGIN and an END record for each source
 * transaction on {@code <topic.prefix>.<topic.transaction>}, and the {@code transaction} block (id, total_order,
 * data_collection_order) in the envelope of each of its change records. Schemas, names and ids as Debezium's PostgreSQL
 * connector writes them (docs/EVENTS.md, "Transaction metadata").
 *
 * <p>What a transaction is here: the streamed changes sharing a commit LSN ({@code source.commit_lsn}). Rows copied by a
 * snapshot (initial or online, {@code source.snapshot} not {@code false}) belong to none, as in Debezium. Events are
 * counted as Debezium counts them: one per change record (a key change is two, its delete and its create), tombstones
 * and skipped truncates not; a transaction whose only changes are skipped truncates still gets its BEGIN and END
 * (event_count 0), as Debezium's.
 *
 * <p>Boundaries: BEGIN is written before the transaction's first change record; END once the transaction is known to
 * be complete: before the first change of the next transaction, or at the end of the batch whose checkpoint's flush
 * position is past the transaction's commit LSN ({@link #complete}). A transaction that the engine cuts into several
 * batches (INV: BOUNDED) therefore has its BEGIN in the batch of its first changes and its END in the batch of its last
 * ones (or the next batch, when the commit arrives after them), each batch one Kafka transaction with its offset. The
 * open transaction's counts travel in that offset ({@link #state()}, restored by {@link #restore}), so that a task
 * resumed inside a cut transaction, on any worker, continues its counts and writes neither a second BEGIN nor a wrong
 * END (exactly once, INV: RESUME).
 *
 * <p>Ids ({@code <xid>:<LSN>}, as Debezium's for PostgreSQL, where the LSN is that of the operation): a change record's
 * block has the change's LSN ({@code source.lsn}); BEGIN the LSN of the transaction's first change (where PostgreSQL 15+
 * sends the BEGIN, so Debezium's id there); END the transaction's commit LSN (Debezium's has the end of the commit record,
 * which the engine does not hand to a destination for each transaction). Compare ids by their {@code <xid>} part, as
 * with Debezium's. One engine thread uses an instance (not thread-safe).
 */
final class TransactionMetadata {
    static final Schema BLOCK = SchemaBuilder.struct().optional().name("event.block").version(1)
            .field("id", Schema.STRING_SCHEMA).field("total_order", Schema.INT64_SCHEMA)
            .field("data_collection_order", Schema.INT64_SCHEMA).build();
    static final Schema KEY = SchemaBuilder.struct().name("io.debezium.connector.common.TransactionMetadataKey").version(1)
            .field("id", Schema.STRING_SCHEMA).build();
    static final Schema COLLECTION = SchemaBuilder.struct().optional().name("event.collection").version(1)
            .field("data_collection", Schema.STRING_SCHEMA).field("event_count", Schema.INT64_SCHEMA).build();
    static final Schema VALUE = SchemaBuilder.struct().name("io.debezium.connector.common.TransactionMetadataValue").version(1)
            .field("status", Schema.STRING_SCHEMA).field("id", Schema.STRING_SCHEMA)
            .field("event_count", Schema.OPTIONAL_INT64_SCHEMA)
            .field("data_collections", SchemaBuilder.array(COLLECTION).optional().build())
            .field("ts_ms", Schema.INT64_SCHEMA).build();
    /** The offset key under which the open transaction's state is stored, beside the checkpoint. */
    static final String OFFSET_KEY = "transaction";

    private static final ObjectMapper MAPPER = new ObjectMapper();

    private final String topic;
    private final Map<String, ?> partition;
    /** The transaction whose BEGIN is written and whose END is not, or null. */
    private Open open;

    /** A source transaction between its BEGIN and its END: what was counted of it so far. */
    private static final class Open {
        final long xid;
        final Lsn commitLsn;
        final long commitMs;
        long total;
        final Map<String, Long> perCollection = new LinkedHashMap<>();

        Open(long xid, Lsn commitLsn, long commitMs) {
            this.xid = xid;
            this.commitLsn = commitLsn;
            this.commitMs = commitMs;
        }
    }

    TransactionMetadata(String topic, Map<String, ?> partition) {
        this.topic = topic;
        this.partition = partition;
    }

    String topic() {
        return topic;
    }

    /**
     * Before the records of {@code e}: the END of the open transaction when {@code e} is of another one, and the BEGIN of
     * {@code e}'s when none is open, appended to {@code out} with {@code offset}. Nothing for snapshot rows.
     */
    void before(ChangeEvent e, Map<String, ?> offset, List<SourceRecord> out) {
        if (e.snapshot()) {
            return;
        }
        Lsn commit = e.position().commitLsn();
        if (open != null && !open.commitLsn.equals(commit)) {
            end(offset, out); // a change of a later transaction: the open one is complete (a batch is cut only at its end)
        }
        if (open == null) {
            open = new Open(e.xid(), commit, Math.floorDiv(e.commitTimeMicros(), 1000L));
            String id = e.xid() + ":" + e.lsn().value();
            out.add(record(offset, id, begin(id, open.commitMs), open.commitMs));
        }
    }

    /** The block of the next change record of {@code e} (counted), or null for a snapshot row. Call after {@link #before}. */
    Struct block(ChangeEvent e) {
        if (e.snapshot() || open == null) {
            return null;
        }
        String collection = e.relation().table().toString();
        long order = open.perCollection.merge(collection, 1L, Long::sum);
        open.total++;
        return new Struct(BLOCK).put("id", e.xid() + ":" + e.lsn().value()).put("total_order", open.total)
                .put("data_collection_order", order);
    }

    /**
     * After a batch's records: the END of the open transaction when the batch completes it ({@code flushLsn}, the end of
     * the last transaction complete in the batch, is past its commit LSN), appended with {@code offset}.
     */
    void complete(Lsn flushLsn, Map<String, ?> offset, List<SourceRecord> out) {
        if (open != null && flushLsn != null && flushLsn.isAfter(open.commitLsn)) {
            end(offset, out);
        }
    }

    private void end(Map<String, ?> offset, List<SourceRecord> out) {
        String id = open.xid + ":" + open.commitLsn.value();
        List<Struct> collections = new ArrayList<>(open.perCollection.size());
        open.perCollection.forEach((name, n) -> collections.add(new Struct(COLLECTION).put("data_collection", name).put("event_count", n)));
        Struct value = new Struct(VALUE).put("status", "END").put("id", id).put("event_count", open.total)
                .put("data_collections", collections).put("ts_ms", open.commitMs);
        out.add(record(offset, id, value, open.commitMs));
        open = null;
    }

    private static Struct begin(String id, long ms) {
        return new Struct(VALUE).put("status", "BEGIN").put("id", id).put("ts_ms", ms);
    }

    private SourceRecord record(Map<String, ?> offset, String id, Struct value, long ms) {
        return new SourceRecord(partition, offset, topic, null, KEY, new Struct(KEY).put("id", id), VALUE, value, ms);
    }

    /** The open transaction as text for the offset ({@value #OFFSET_KEY}), or null when none is open. */
    String state() {
        if (open == null) {
            return null;
        }
        ObjectNode n = MAPPER.createObjectNode().put("xid", open.xid).put("commit_lsn", open.commitLsn.value())
                .put("ts_ms", open.commitMs).put("event_count", open.total);
        ObjectNode per = n.putObject("data_collections");
        open.perCollection.forEach(per::put);
        return n.toString();
    }

    /** Takes the state of {@link #state()} back (null: none open), as the committed offset holds it. */
    void restore(String state) {
        open = null;
        if (state == null) {
            return;
        }
        check(state);
        JsonNode n = parse(state);
        Open o = new Open(n.get("xid").longValue(), Lsn.of(n.get("commit_lsn").longValue()), n.get("ts_ms").longValue());
        o.total = n.get("event_count").longValue();
        for (Iterator<Map.Entry<String, JsonNode>> it = n.get("data_collections").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> f = it.next();
            o.perCollection.put(f.getKey(), f.getValue().longValue());
        }
        open = o;
    }

    /** Checks a stored state (an offset set through the REST API); throws IllegalArgumentException naming what is wrong. */
    static void check(String state) {
        JsonNode n = parse(state);
        for (String f : List.of("xid", "commit_lsn", "ts_ms", "event_count")) {
            if (n.get(f) == null || !n.get(f).isIntegralNumber()) {
                throw new IllegalArgumentException("the offset's '" + OFFSET_KEY + "' has no number '" + f + "': " + state);
            }
        }
        if (n.get("data_collections") == null || !n.get("data_collections").isObject()) {
            throw new IllegalArgumentException("the offset's '" + OFFSET_KEY + "' has no object 'data_collections': " + state);
        }
    }

    private static JsonNode parse(String state) {
        JsonNode n;
        try {
            n = MAPPER.readTree(state);
        } catch (IOException e) {
            throw new IllegalArgumentException("the offset's '" + OFFSET_KEY + "' is not JSON: " + e.getMessage(), e);
        }
        if (n == null || !n.isObject()) {
            throw new IllegalArgumentException("the offset's '" + OFFSET_KEY + "' is not a JSON object: " + state);
        }
        return n;
    }
}

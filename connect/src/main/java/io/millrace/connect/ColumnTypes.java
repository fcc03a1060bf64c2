package io.millrace.connect;

import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;

/**
 * The Connect schema of a column, from its type codec's label ({@code int4}, {@code _text}, {@code public.mood}): the
 * Connect type of the column's JSON form in docs/TYPES.md, with the logical name Debezium's PostgreSQL connector gives
 * the same form ({@code io.debezium.time.MicroTimestamp}, {@code io.debezium.data.Json}, ...). Types whose JSON form
 * is a string and that Debezium names differently (geometric types, ranges, ...) are plain strings; numeric, money and
 * interval as Debezium's handling modes say ({@link Modes}). Stateless.
 */
final class ColumnTypes {
    private ColumnTypes() {
    }

    /**
     * How numeric, money and interval values are written: Debezium's {@code decimal.handling.mode} ({@code precise}: Kafka
     * {@code Decimal}, or {@code io.debezium.data.VariableScaleDecimal} for a numeric without a scale; {@code double};
     * {@code string}) and {@code interval.handling.mode} ({@code numeric}: {@code io.debezium.time.MicroDuration}, months
     * as 365.25 / 12 days; {@code string}: ISO-8601). Array elements keep their JSON form (string).
     */
    record Modes(String decimal, String interval) {
        static final Modes STRINGS = new Modes("string", "string");
        /** Debezium's defaults. */
        static final Modes DEBEZIUM = new Modes("precise", "numeric");
    }

    static final String VARIABLE_SCALE_DECIMAL = "io.debezium.data.VariableScaleDecimal";
    static final String MICRO_DURATION = "io.debezium.time.MicroDuration";
    /** Debezium's schema parameter for a {@code Decimal}'s precision. */
    static final String PRECISION = "connect.decimal.precision";

    /** The schema of a column of type {@code label}; optional unless it is a key column. */
    static Schema schema(String label, boolean optional) {
        return schema(label, -1, optional, Modes.STRINGS);
    }

    /** The schema of a column of type {@code label} and type modifier {@code typmod}, its values written as {@code modes} say. */
    static Schema schema(String label, int typmod, boolean optional, Modes modes) {
        SchemaBuilder b;
        if (label.startsWith("_")) {
            b = SchemaBuilder.array(schema(label.substring(1), -1, true, Modes.STRINGS));
        } else {
            b = moded(label, typmod, modes);
            if (b == null) {
                b = scalar(label);
            }
        }
        if (optional) {
            b.optional();
        }
        return b.build();
    }

    /** The schema numeric, money and interval take under {@code modes}, or null for their string forms and other types. */
    private static SchemaBuilder moded(String label, int typmod, Modes modes) {
        boolean decimal = label.equals("numeric") || label.equals("money");
        if (decimal && modes.decimal().equals("double")) {
            return SchemaBuilder.float64();
        }
        if (decimal && modes.decimal().equals("precise")) {
            if (label.equals("money")) {
                return org.apache.kafka.connect.data.Decimal.builder(2); // as Debezium's money.fraction.digits default
            }
            int t = typmod - 4;
            int scale = ((t & 0x7ff) ^ 1024) - 1024;
            int precision = (t >> 16) & 0xffff;
            if (typmod < 4 || scale < 0 || scale > precision) {
                // no scale; or PostgreSQL 15's negative scale or one above the precision, which a Decimal schema (Avro's) cannot hold
                return SchemaBuilder.struct().name(VARIABLE_SCALE_DECIMAL).version(1).doc("Variable scaled decimal")
                        .field("scale", Schema.INT32_SCHEMA).field("value", Schema.BYTES_SCHEMA);
            }
            return org.apache.kafka.connect.data.Decimal.builder(scale).parameter(PRECISION, String.valueOf(precision));
        }
        if (label.equals("interval") && modes.interval().equals("numeric")) {
            return SchemaBuilder.int64().name(MICRO_DURATION).version(1);
        }
        return null;
    }

    private static SchemaBuilder scalar(String label) {
        return switch (label) {
            case "bool" -> SchemaBuilder.bool();
            case "int2" -> SchemaBuilder.int16();
            case "int4" -> SchemaBuilder.int32();
            case "int8", "oid", "xid", "cid", "xid8" -> SchemaBuilder.int64();
            case "float4" -> SchemaBuilder.float32();
            case "float8" -> SchemaBuilder.float64();
            case "bytea" -> SchemaBuilder.bytes();
            case "date" -> SchemaBuilder.int32().name("io.debezium.time.Date").version(1);
            case "time" -> SchemaBuilder.int64().name("io.debezium.time.MicroTime").version(1);
            case "timestamp" -> SchemaBuilder.int64().name("io.debezium.time.MicroTimestamp").version(1);
            case "timestamptz" -> SchemaBuilder.string().name("io.debezium.time.ZonedTimestamp").version(1);
            case "timetz" -> SchemaBuilder.string().name("io.debezium.time.ZonedTime").version(1);
            case "interval" -> SchemaBuilder.string().name("io.debezium.time.Interval").version(1);
            case "uuid" -> SchemaBuilder.string().name("io.debezium.data.Uuid").version(1);
            case "json", "jsonb" -> SchemaBuilder.string().name("io.debezium.data.Json").version(1);
            case "xml" -> SchemaBuilder.string().name("io.debezium.data.Xml").version(1);
            default -> SchemaBuilder.string(); // numeric, money, text, enums, ranges, geometry, ...: their JSON form is a string
        };
    }
}

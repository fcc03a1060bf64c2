package io.millrace.connect;

import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;

/**
 * The Connect schema of a column, from its type codec's label ({@code int4}, {@code _text}, {@code public.mood}): the
 * Connect type of the column's JSON form in docs/TYPES.md, with the logical name Debezium's PostgreSQL connector gives
 * the same form ({@code io.debezium.time.MicroTimestamp}, {@code io.debezium.data.Json}, ...). Types whose JSON form
 * is a string and that Debezium names differently (numeric as {@code decimal.handling.mode=string}, geometric types,
 * ranges, ...) are plain strings. Stateless.
 */
final class ColumnTypes {
    private ColumnTypes() {
    }

    /** The schema of a column of type {@code label}; optional unless it is a key column. */
    static Schema schema(String label, boolean optional) {
        SchemaBuilder b;
        if (label.startsWith("_")) {
            b = SchemaBuilder.array(schema(label.substring(1), true));
        } else {
            b = scalar(label);
        }
        if (optional) {
            b.optional();
        }
        return b.build();
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

package io.millrace.core.schema;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The event trigger's key: told (a list, empty for none), or not told by a trigger installed before it wrote one. */
class SchemaChangeTest {
    private static SchemaChange parse(String json) {
        return SchemaChange.parse(json.getBytes(StandardCharsets.UTF_8));
    }

    private static final String BASE = "{\"command\":\"ALTER TABLE\",\"oid\":16384,\"schema\":\"public\",\"table\":\"f\",\"columns\":[],"
            + "\"dropped\":false,\"ddl\":\"ALTER TABLE f ...\"";

    @Test
    void theKeyIsReadAsToldAndKeptByTheLaterOfTwoMessages() {
        SchemaChange told = parse(BASE + ",\"key\":[\"b\",\"a\"]}");
        SchemaChange none = parse(BASE + ",\"key\":[]}");
        SchemaChange old = parse(BASE + "}");
        assertThat(told.key()).containsExactly("b", "a");
        assertThat(none.key()).isEmpty();
        assertThat(old.key()).isNull();
        assertThat(told.then(none).key()).isEmpty();
        assertThat(none.then(told).key()).containsExactly("b", "a");
        assertThat(told.then(old).key()).as("a message that does not tell keeps the key told before").containsExactly("b", "a");
        assertThat(SchemaChange.guessed(new RelationInfo(1, new TableRef("public", "f"), 'f', List.of(), null, null),
                new RelationInfo(1, new TableRef("public", "f"), 'f', List.of(), null, null)).key()).isNull();
    }
}

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

    /**
     * Several DDLs of one query string each carry the whole string: joined once, not once per DDL (a user's event held
     * the psql command three times over); two statements sent apart are both kept; the rewrite told by any of them stays.
     */
    @Test
    void theDdlOfOneQueryStringIsKeptOnceAndARewriteIsKept() {
        String q = "BEGIN; ALTER TABLE f RENAME a TO tmp; ALTER TABLE f RENAME b TO a; ALTER TABLE f RENAME tmp TO b; COMMIT;";
        SchemaChange one = parse(BASE.replace("ALTER TABLE f ...", q) + "}");
        assertThat(one.then(one).then(one).ddl()).isEqualTo(q);
        SchemaChange rewrite = parse(BASE.replace("ALTER TABLE f ...", "ALTER TABLE f ALTER n TYPE int USING n + 1") + ",\"rewritten\":true}");
        SchemaChange both = one.then(rewrite);
        assertThat(both.ddl()).isEqualTo(q + ";\nALTER TABLE f ALTER n TYPE int USING n + 1");
        assertThat(both.rewritten()).isTrue();
        assertThat(both.then(one).rewritten()).isTrue();
        assertThat(one.rewritten()).as("not told: an older trigger").isFalse();
    }
}

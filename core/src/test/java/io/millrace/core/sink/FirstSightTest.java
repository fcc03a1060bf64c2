package io.millrace.core.sink;

import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.SchemaChange;
import io.millrace.core.schema.TableRef;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/** The plan a table destination follows at its first sight of a table after a restart (DdlTriggerIT runs it end to end). */
class FirstSightTest {
    /** Table t was {1 id, 2 v, 3 x, 4 y}; the trigger's account ends in {@code columns} (attribute number → name). */
    private static RelationInfo after(String columns) {
        String json = "{\"command\":\"ALTER TABLE\",\"oid\":16384,\"schema\":\"public\",\"table\":\"t\",\"dropped\":false,"
                + "\"before\":{\"1\":\"id\",\"2\":\"v\",\"3\":\"x\",\"4\":\"y\"},\"columns\":[" + columns + "],\"ddl\":\"...\"}";
        SchemaChange c = SchemaChange.parse(json.getBytes(StandardCharsets.UTF_8));
        return new RelationInfo(16384, new TableRef("public", "t"), 'd', List.of(), null, null).withDdl(c);
    }

    private static String col(int attnum, String name) {
        return "{\"attnum\":" + attnum + ",\"name\":\"" + name + "\",\"type\":\"integer\",\"not_null\":false,\"missing\":false}";
    }

    private static final Set<String> BEFORE = Set.of("id", "v", "x", "y");

    @Test
    void aDroppedColumnGoesFirstAndASwapRunsThroughTemporaryNames() {
        // x and y swapped, v dropped and x (attnum 4, y before) renamed to v
        FirstSight f = FirstSight.of(after(col(1, "id") + "," + col(3, "y") + "," + col(4, "v")), BEFORE, BEFORE, Set.of());
        assertThat(f.drops()).containsExactly("v");
        assertThat(f.renamed()).containsExactly(org.assertj.core.api.Assertions.entry("x", "y"), org.assertj.core.api.Assertions.entry("y", "v"));
        assertThat(f.steps()).extracting(s -> s[0] + ">" + s[1])
                .containsExactly("x>millrace_renaming_0", "y>millrace_renaming_1", "millrace_renaming_0>y", "millrace_renaming_1>v");
    }

    @Test
    void nothingIsPlannedOutsideTheShapeBeforeOrOverAColumnTheAccountDoesNotMove() {
        RelationInfo renamed = after(col(1, "id") + "," + col(2, "w") + "," + col(3, "x") + "," + col(4, "y"));
        assertThat(FirstSight.of(renamed, Set.of("id", "w", "x", "y"), BEFORE, Set.of())).as("applied here already").isNull();
        assertThat(FirstSight.of(renamed, BEFORE, BEFORE, Set.of("v"))).as("a column the destination cannot rename").isNull();
        RelationInfo intoDropped = after(col(1, "id") + "," + col(3, "v") + "," + col(4, "y"));
        assertThat(FirstSight.of(intoDropped, BEFORE, Set.of(), Set.of())).as("v, dropped in the source, is not this destination's to drop")
                .isNull();
        assertThat(FirstSight.told(after(col(1, "id") + "," + col(2, "v") + "," + col(3, "x") + "," + col(4, "y")))).as("no rename")
                .isFalse();
    }
}

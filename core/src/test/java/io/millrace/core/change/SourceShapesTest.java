package io.millrace.core.change;

import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.schema.TypeResolver;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.SortedMap;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/** {@link SourceShapes}: what a fingerprint tells apart, and how a checkpoint's shapes follow a batch. */
class SourceShapesTest {
    private static final TypeResolver TYPES = io.millrace.core.types.Codecs::builtin;

    private static RelationInfo rel(int oid, ColumnInfo... columns) {
        return new RelationInfo(oid, new TableRef("public", "t" + oid), 'd', List.of(columns), TYPES);
    }

    private static ColumnInfo col(String name, int type, int typmod, boolean key) {
        return new ColumnInfo(name, TYPES.resolve(type), typmod, key);
    }

    @Test
    void aFingerprintTellsNamesTypesTypmodsAndOrderApartButNotKeyFlags() {
        String base = SourceShapes.fingerprint(rel(1, col("id", 23, -1, true), col("v", 1043, 24, false)));
        assertThat(SourceShapes.fingerprint(rel(1, col("id", 23, -1, true), col("v", 1043, 24, true)))).as("key flags").isEqualTo(base);
        assertThat(SourceShapes.fingerprint(rel(2, col("id", 23, -1, true), col("v", 1043, 24, false)))).as("another oid").isEqualTo(base);
        assertThat(List.of(
                SourceShapes.fingerprint(rel(1, col("id", 23, -1, true), col("v", 1043, 54, false))),
                SourceShapes.fingerprint(rel(1, col("id", 23, -1, true), col("v", 25, -1, false))),
                SourceShapes.fingerprint(rel(1, col("id", 23, -1, true), col("w", 1043, 24, false))),
                SourceShapes.fingerprint(rel(1, col("v", 1043, 24, false), col("id", 23, -1, true))),
                SourceShapes.fingerprint(rel(1, col("id", 23, -1, true), col("v", 1043, 24, false), col("x", 23, -1, false))),
                SourceShapes.fingerprint(rel(1, col("idv", 23, -1, true), col("", 1043, 24, false)))))
                .doesNotContain(base).doesNotHaveDuplicates().allMatch(f -> f.matches("[0-9a-f]{16}"));
    }

    @Test
    void aBatchRecordsTheShapeOfEachTablesLastEventAndKeepsTheOthers() {
        RelationInfo a1 = rel(1, col("id", 23, -1, true));
        RelationInfo a2 = rel(1, col("id", 23, -1, true), col("x", 23, -1, false));
        RelationInfo b = rel(2, col("id", 23, -1, true));
        SortedMap<Integer, String> before = new TreeMap<>(java.util.Map.of(2, "0000000000000000", 3, SourceShapes.fingerprint(b)));
        Position p = new Position(Lsn.of(100), 1);
        List<ChangeEvent> batch = List.of(
                new ChangeEvent(io.millrace.core.change.Op.CREATE, a1, null, new Object[]{1}, Lsn.of(90), p, 7, 0, false),
                new ChangeEvent(io.millrace.core.change.Op.CREATE, b, null, new Object[]{1}, Lsn.of(91), p, 7, 0, false),
                new ChangeEvent(io.millrace.core.change.Op.CREATE, a2, null, new Object[]{2, 2}, Lsn.of(92), p, 7, 0, false));
        SortedMap<Integer, String> after = SourceShapes.follow(before, batch);
        assertThat(after).containsEntry(1, SourceShapes.fingerprint(a2)).containsEntry(2, SourceShapes.fingerprint(b))
                .containsEntry(3, SourceShapes.fingerprint(b)).hasSize(3);
        assertThat(SourceShapes.follow(after, batch.subList(2, 3))).as("nothing changed: the same map").isSameAs(after);
    }

    /** A withheld table's entry keeps its columns (any name: quotes, commas, unicode) and is never read as a fingerprint. */
    @Test
    void aWithheldEntryKeepsItsColumnsAndIsNoFingerprint() {
        List<String> cols = List.of("id", "a,b", "say \"hi\"", "ünï", "");
        String entry = SourceShapes.withheld(cols);
        assertThat(SourceShapes.withheldColumns(entry)).containsExactlyElementsOf(cols);
        assertThat(entry).doesNotMatch("[0-9a-f]{16}");
        assertThat(SourceShapes.withheldColumns(SourceShapes.fingerprint(rel(1, col("id", 23, -1, true))))).isNull();
        assertThat(SourceShapes.withheldColumns(null)).isNull();
    }

    /**
     * A hold until a reconcile message is told apart from one the stream ends; and a withheld entry stands over the rows
     * of a copy under way (found in review: the chunks' fingerprint replaced the hold, which a crash then lost).
     */
    @Test
    void aWithheldEntryStandsOverTheRowsOfACopyUnderWay() {
        String until = SourceShapes.withheldUntilReconciled(List.of("id", "v"));
        assertThat(SourceShapes.untilReconciled(until)).isTrue();
        assertThat(SourceShapes.untilReconciled(SourceShapes.withheld(List.of("id")))).isFalse();
        assertThat(SourceShapes.withheldColumns(until)).containsExactly("id", "v");
        RelationInfo t = rel(7, col("id", 23, -1, true), col("v", 25, -1, false));
        RelationInfo other = rel(8, col("id", 23, -1, true));
        SortedMap<Integer, String> before = new TreeMap<>(java.util.Map.of(7, until));
        Position p = new Position(Lsn.of(100), 1);
        SortedMap<Integer, String> after = SourceShapes.follow(before, List.of(
                new ChangeEvent(io.millrace.core.change.Op.READ, t, null, new Object[]{1, "a"}, Lsn.of(90), p, 7, 0, true),
                new ChangeEvent(io.millrace.core.change.Op.READ, other, null, new Object[]{1}, Lsn.of(90), p, 7, 0, true)));
        assertThat(after).containsEntry(7, until).containsEntry(8, SourceShapes.fingerprint(other));
    }

    /** A DDL waiting for its table's next description: read back whole from the entry, beside the shape that was written. */
    @Test
    void aPendingDdlEntryKeepsTheTriggersAccountAndTheShapeWritten() {
        String json = "{\"command\":\"ALTER TABLE\",\"oid\":3000000000,\"schema\":\"public\",\"table\":\"k2\",\"old_schema\":\"public\","
                + "\"old_table\":\"k\",\"before\":{\"1\":\"a\",\"2\":\"b\"},\"columns\":[{\"attnum\":1,\"name\":\"a\",\"type\":\"integer\","
                + "\"not_null\":true,\"missing\":false},{\"attnum\":2,\"name\":\"actor\",\"type\":\"text\",\"not_null\":false,\"missing\":false},"
                + "{\"attnum\":3,\"name\":\"z\",\"type\":\"integer\",\"not_null\":false,\"missing\":true,\"value\":\"9\"}],"
                + "\"dropped\":false,\"ddl\":\"ALTER TABLE k RENAME b TO actor: it's\",\"key\":[\"a\"],\"rewritten\":false}";
        io.millrace.core.schema.SchemaChange c = io.millrace.core.schema.SchemaChange.parse(json.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        String fp = SourceShapes.fingerprint(rel(1, col("a", 23, -1, true), col("b", 25, -1, false)));
        String entry = SourceShapes.pendingDdl(fp, c);
        assertThat(SourceShapes.pendingChange(entry)).isEqualTo(c);
        assertThat(SourceShapes.written(entry)).isEqualTo(fp);
        assertThat(SourceShapes.written(SourceShapes.pendingDdl(null, c))).isEmpty();
        // the batch's mark (no shape written) takes each destination's shape as it is
        assertThat(SourceShapes.withWritten(SourceShapes.pendingDdl(null, c), fp)).isEqualTo(entry);
        assertThat(SourceShapes.withWritten(entry, null)).isEqualTo(SourceShapes.pendingDdl(null, c));
        assertThat(SourceShapes.isPendingDdl(entry)).isTrue();
        assertThat(SourceShapes.isPendingDdl(fp)).isFalse();
        assertThat(SourceShapes.withheldColumns(entry)).as("not a hold").isNull();
        assertThat(SourceShapes.pendingChange(fp)).isNull();
        assertThat(SourceShapes.written(fp)).isEqualTo(fp);
    }
}

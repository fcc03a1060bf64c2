package io.millrace.cli.crash;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** The crash test's checker must itself catch what it claims to catch: each rule, one file set. */
class JsonlReplayTest {
    @TempDir
    Path dir;

    private static final Map<String, JsonlReplay.TableShape> SHAPES = Map.of(
            "public.k", new JsonlReplay.TableShape(List.of("id", "v"), 0),
            "public.txlog", new JsonlReplay.TableShape(List.of("tx_id", "note"), -1));

    private static String ev(String op, String table, boolean snapshot, long lsn, long ordinal, String before, String after) {
        return "{\"before\":" + before + ",\"after\":" + after + ",\"source\":{\"schema\":\"public\",\"table\":\"" + table
                + "\",\"snapshot\":\"" + snapshot + "\",\"commit_lsn\":" + lsn + ",\"ordinal\":" + ordinal + "},\"op\":\"" + op + "\"}";
    }

    private static String c(long lsn, long ord, int id, String v) {
        return ev("c", "k", false, lsn, ord, "null", "{\"id\":" + id + ",\"v\":\"" + v + "\"}");
    }

    private static String tx(long lsn, long ord, long txId) {
        return ev("c", "txlog", false, lsn, ord, "null", "{\"tx_id\":" + txId + ",\"note\":\"x\"}");
    }

    private void files(List<List<String>> files) throws IOException {
        for (int i = 0; i < files.size(); i++) {
            Files.writeString(dir.resolve(String.format("events-%06d.jsonl", i + 1)), String.join("\n", files.get(i)) + "\n");
        }
    }

    private JsonlReplay replay() throws IOException {
        JsonlReplay r = new JsonlReplay(SHAPES);
        r.readAll(dir);
        r.finish();
        return r;
    }

    private static String read(long lsn, long ord, int id, String v) {
        return ev("r", "k", false, lsn, ord, "null", "{\"id\":" + id + ",\"v\":\"" + v + "\"}").replace("\"snapshot\":\"false\"",
                "\"snapshot\":\"incremental\"");
    }

    @Test
    void anOnlineCopyUpsertsAndExcusesTheChangesBeforeIt() throws IOException {
        files(List.of(List.of(tx(100, 1, 7),
                ev("u", "k", false, 110, 1, "null", "{\"id\":1,\"v\":\"b\"}"), // not copied yet: finds no row
                c(120, 1, 2, "x"),
                read(130, 1, 1, "b"), read(130, 2, 2, "x"), // the copy: row 2 exists already, row 1 too (from the update)
                c(140, 1, 3, "y"), tx(140, 2, 8))));
        JsonlReplay r = replay();
        assertThat(r.anomalies).isEmpty();
        assertThat(r.incrementalUpserts).isEqualTo(2);
        assertThat(r.excusedByCopy).isEqualTo(1);
        assertThat(r.table("public.k")).isEqualTo(Map.of(List.of("1", "b"), 1, List.of("2", "x"), 1, List.of("3", "y"), 1));
    }

    @Test
    void aChangeThatFindsNoRowAndNoCopyFollowsIsStillAnAnomaly() throws IOException {
        files(List.of(List.of(tx(100, 1, 7), read(105, 1, 5, "a"),
                ev("d", "k", false, 110, 1, "{\"id\":9,\"v\":null}", "null"), tx(110, 2, 8))));
        JsonlReplay r = replay();
        assertThat(r.anomalies).singleElement().asString().contains("delete of key 9 that does not exist");
    }

    @Test
    void cleanStreamReplays() throws IOException {
        files(List.of(List.of(ev("r", "k", true, 50, 0, "null", "{\"id\":1,\"v\":\"a\"}"), c(100, 1, 2, "b"), tx(100, 2, 7)),
                List.of(ev("u", "k", false, 200, 1, "null", "{\"id\":1,\"v\":\"" + JsonlReplay.UNAVAILABLE + "\"}"),
                        ev("d", "k", false, 200, 2, "{\"id\":2,\"v\":null}", "null"), tx(200, 3, 8))));
        JsonlReplay r = replay();
        assertThat(r.anomalies).isEmpty();
        assertThat(r.table("public.k")).isEqualTo(Map.of(List.of("1", "a"), 1)); // the TOAST placeholder kept "a"
        assertThat(r.txlogCreated).containsOnlyKeys(7L, 8L);
    }

    @Test
    void repeatRunAtFileStartUpToTheHighestPositionIsDropped() throws IOException {
        files(List.of(List.of(c(100, 1, 1, "a"), c(100, 2, 2, "b"), tx(100, 3, 7)),
                List.of(c(100, 2, 2, "b"), tx(100, 3, 7), c(300, 1, 3, "c"))));
        JsonlReplay r = replay();
        assertThat(r.anomalies).isEmpty();
        assertThat(r.repeats).isEqualTo(2);
        assertThat(r.repeatRuns).isEqualTo(1);
        assertThat(r.txlogCreated).containsEntry(7L, 1);
        assertThat(r.table("public.k")).hasSize(3);
    }

    @Test
    void repeatInsideAFileIsAnAnomaly() throws IOException {
        files(List.of(List.of(c(100, 1, 1, "a"), c(100, 2, 2, "b"), c(100, 2, 2, "b"), c(300, 1, 3, "c"))));
        assertThat(replay().anomalies).anyMatch(a -> a.contains("inside a file"));
    }

    @Test
    void repeatRunThatStopsShortIsAnAnomaly() throws IOException {
        files(List.of(List.of(c(100, 1, 1, "a"), c(100, 2, 2, "b"), c(100, 3, 3, "c")),
                List.of(c(100, 1, 1, "a"), c(300, 1, 4, "d"))));
        assertThat(replay().anomalies).anyMatch(a -> a.contains("repeat run ended"));
    }

    @Test
    void repeatRunWithAGapIsAnAnomaly() throws IOException {
        files(List.of(List.of(c(100, 1, 1, "a"), c(100, 2, 2, "b"), c(100, 3, 3, "c")),
                List.of(c(100, 1, 1, "a"), c(100, 3, 3, "c"), c(300, 1, 4, "d"))));
        assertThat(replay().anomalies).anyMatch(a -> a.contains("skips"));
    }

    @Test
    void repeatWithOtherContentIsAnAnomaly() throws IOException {
        files(List.of(List.of(c(100, 1, 1, "a")), List.of(c(100, 1, 1, "CHANGED"), c(300, 1, 4, "d"))));
        assertThat(replay().anomalies).anyMatch(a -> a.contains("differs from its first copy"));
    }

    @Test
    void unseenPositionBackwardsIsOutOfOrder() throws IOException {
        files(List.of(List.of(c(100, 1, 1, "a"), c(300, 1, 3, "c"), c(200, 1, 2, "b"))));
        JsonlReplay r = replay();
        assertThat(r.regressions).isEqualTo(1);
        assertThat(r.anomalies).anyMatch(a -> a.contains("out of order"));
    }

    @Test
    void snapshotAfterStreamAndMissingRowsAreAnomalies() throws IOException {
        files(List.of(List.of(c(100, 1, 1, "a"), ev("r", "k", true, 50, 0, "null", "{\"id\":9,\"v\":\"z\"}"),
                ev("d", "k", false, 200, 1, "{\"id\":5,\"v\":null}", "null"))));
        JsonlReplay r = replay();
        assertThat(r.snapshotAfterStream).isEqualTo(1);
        assertThat(r.anomalies).anyMatch(a -> a.contains("delete of key 5") && a.contains("no TRUNCATE"));
    }

    @Test
    void missingRowsBeforeAStreamedTruncateAreExcused() throws IOException {
        List<String> f = new ArrayList<>();
        f.add(ev("t", "k", true, 50, 0, "null", "null"));
        f.add(ev("u", "k", false, 100, 1, "null", "{\"id\":3,\"v\":\"x\"}")); // the copy missed row 3: TRUNCATE later
        f.add(ev("t", "k", false, 200, 1, "null", "null"));
        f.add(c(200, 2, 3, "y"));
        files(List.of(f));
        JsonlReplay r = replay();
        assertThat(r.anomalies).isEmpty();
        assertThat(r.excusedByTruncate).isEqualTo(1);
        assertThat(r.table("public.k")).isEqualTo(Map.of(List.of("3", "y"), 1));
    }

    @Test
    void tornLastLineIsAnAnomaly() throws IOException {
        Files.writeString(dir.resolve("events-000001.jsonl"), c(100, 1, 1, "a") + "\n{\"before\":nu");
        assertThat(replay().unterminatedLines).isEqualTo(1);
    }
}

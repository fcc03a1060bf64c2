package com.example.millrace.csv;

import io.millrace.core.MillraceException;
import io.millrace.core.Position;
import io.millrace.core.sink.DestinationProviders;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.Engine;
import io.millrace.engine.config.ConfigLoader;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.Statement;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/**
 * The csv destination, found only through its META-INF/services entry, run by the real engine from a YAML
 * configuration against an embedded PostgreSQL: the change log replayed equals what the source committed, across
 * a restart and a column added, and its settings' mistakes are named like the built-in destinations'.
 */
class CsvDestinationIT {
    private static EmbeddedPg pg;

    @BeforeAll
    static void start() {
        pg = EmbeddedPg.start();
        pg.createDatabase("shop");
        pg.execute("shop", "CREATE TABLE public.items (id int PRIMARY KEY, name text, price numeric(10,2), note text)",
                "INSERT INTO public.items SELECT g, 'item ' || g, g * 1.5, CASE g % 4 WHEN 0 THEN NULL WHEN 1 THEN ''"
                        + " WHEN 2 THEN 'a \"quoted\", comma' ELSE E'two\\nlines' END FROM generate_series(1, 300) g");
    }

    @AfterAll
    static void stop() {
        pg.close();
    }

    private static String yaml(String destination) {
        return String.join("\n",
                "name: shop",
                "source: {host: 127.0.0.1, port: " + pg.port() + ", database: shop, user: postgres, slot: csv_example, publication: csv_example,",
                "         tables: [public.items]}",
                "destinations:",
                "  - " + destination,
                "");
    }

    @Test
    void theChangeLogHoldsWhatTheSourceCommitted(@TempDir Path dir) throws Exception {
        String yaml = yaml("{name: changes, type: csv, directory: out}");
        Path out = dir.resolve("out");
        try (Running e = new Running(yaml, dir)) {
            awaitReplayEqualsSource(out, e);
            pg.execute("shop", "UPDATE public.items SET price = price + 1, note = 'changed' WHERE id % 10 = 0",
                    "DELETE FROM public.items WHERE id % 7 = 0",
                    "INSERT INTO public.items VALUES (1000, 'late, \"new\"', 9.99, NULL), (1001, '', 0, 'x')");
            awaitReplayEqualsSource(out, e);
        }
        // As after a crash between the lines and the state file: lines past the checkpoint (the last one torn) and a file
        // begun since. The next open cuts them off; the engine sends those changes again.
        Files.writeString(out.resolve("public.items.csv"), "0/FFFFFFF,1,c,99999,ghost,1.00,x\n0/FFFFFFF,2,c,99998,to", StandardOpenOption.APPEND);
        Files.writeString(out.resolve("public.items.2.csv"), "_commit_lsn,_ordinal,_op,id\n0/FFFFFFF,3,c,99997\n");
        // A second run resumes after the checkpoint the first left; a column added starts a new file for the table.
        try (Running e = new Running(yaml, dir)) {
            pg.execute("shop", "ALTER TABLE public.items ADD COLUMN qty int",
                    "UPDATE public.items SET qty = id % 5 WHERE id <= 50", "INSERT INTO public.items VALUES (2000, 'after', 1, 'n', 7)",
                    "DELETE FROM public.items WHERE id = 3");
            awaitReplayEqualsSource(out, e);
        }
        assertThat(Files.readString(out.resolve("public.items.csv"))).doesNotContain("ghost").endsWith("\n");
        assertThat(Files.readString(out.resolve("public.items.2.csv"))).as("the new shape's file").startsWith("_commit_lsn,_ordinal,_op,id,name,price,note,qty\n")
                .doesNotContain("99997");
        List<Position> streamed = CsvChangeLog.read(out).stream().map(CsvChangeLog.Change::position)
                .filter(p -> p.isAfter(Position.START)).toList();
        assertThat(streamed).as("after a clean stop nothing is written twice (INV: RESUME)").doesNotHaveDuplicates().isNotEmpty();
    }

    @Test
    void itsSettingsAreCheckedAndNamedLikeTheBuiltInOnes(@TempDir Path dir) {
        assertThat(DestinationProviders.installed().types()).contains("csv");
        assertThat(configError(yaml("{name: changes, type: csv, directroy: out}"), dir))
                .contains("config: destinations[0].directroy is not a known setting; did you mean 'directory'?")
                .contains("known here: name, type, directory");
        assertThat(configError(yaml("{name: changes, type: csv}"), dir)).contains("config: destinations[0].directory is required for a csv destination");
        assertThat(configError(yaml("{name: changes, type: cvs, directory: out}"), dir))
                .contains("destinations[0].type must be one of").contains("csv; got 'cvs'");
    }

    private static String configError(String yaml, Path dir) {
        MillraceException e = catchThrowableOfType(MillraceException.class, () -> new ConfigLoader(Map.<String, String>of()::get).parse(yaml, dir));
        assertThat(e).as("a configuration error for:\n" + yaml).isNotNull();
        assertThat(e.kind()).isEqualTo(MillraceException.Kind.CONFIG);
        return e.getMessage();
    }

    /** Polls until the change log, replayed, equals the source table; fails with the last difference. */
    private static void awaitReplayEqualsSource(Path out, Running e) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        Map<String, Map<String, String>> source;
        Map<String, Map<String, String>> replayed;
        do {
            e.check();
            source = sourceRows();
            replayed = replay(out);
            if (replayed.equals(source)) {
                return;
            }
            Thread.sleep(100);
        } while (System.currentTimeMillis() < deadline);
        assertThat(replayed).isEqualTo(source);
    }

    private static Map<String, Map<String, String>> sourceRows() throws Exception {
        Map<String, Map<String, String>> rows = new TreeMap<>();
        try (Connection c = pg.connect("shop"); Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT * FROM public.items")) {
            ResultSetMetaData md = rs.getMetaData();
            while (rs.next()) {
                Map<String, String> row = new HashMap<>();
                for (int i = 1; i <= md.getColumnCount(); i++) {
                    row.put(md.getColumnName(i), rs.getString(i));
                }
                rows.put(rs.getString("id"), row);
            }
        }
        return rows;
    }

    /** The table as the change log says it is: each change applied in turn. */
    private static Map<String, Map<String, String>> replay(Path out) throws Exception {
        Map<String, Map<String, String>> rows = new TreeMap<>();
        for (CsvChangeLog.Change c : CsvChangeLog.read(out)) {
            String id = c.row().get("id");
            switch (c.op()) {
                case "t" -> rows.clear();
                case "d" -> rows.remove(id);
                default -> {
                    Map<String, String> row = new HashMap<>(rows.getOrDefault(id, Map.of()));
                    c.row().forEach((k, v) -> {
                        if (!CsvSink.UNCHANGED.equals(v)) {
                            row.put(k, v);
                        }
                    });
                    rows.put(id, row);
                }
            }
        }
        Set<String> columns = new HashSet<>();
        rows.values().forEach(r -> columns.addAll(r.keySet()));
        rows.values().forEach(r -> columns.forEach(c -> r.putIfAbsent(c, null))); // a column added after a row's last line: NULL
        return rows;
    }

    /** The engine of a YAML configuration on its own thread, stopped on close. */
    private static final class Running implements AutoCloseable {
        private final Engine engine;
        private final Thread thread;
        private final AtomicReference<Throwable> error = new AtomicReference<>();

        Running(String yaml, Path base) {
            engine = new Engine(new ConfigLoader(Map.<String, String>of()::get).parse(yaml, base));
            thread = new Thread(() -> {
                try {
                    engine.run();
                } catch (Throwable t) {
                    error.set(t);
                }
            }, "csv-example-engine");
            thread.setDaemon(true);
            thread.start();
        }

        /** Fails with the engine's error if it stopped. */
        void check() {
            if (!thread.isAlive()) {
                throw new AssertionError("the engine stopped: " + error.get(), error.get());
            }
        }

        @Override
        public void close() throws InterruptedException {
            engine.stop();
            thread.join(30_000);
            assertThat(thread.isAlive()).as("engine stopped").isFalse();
            assertThat(error.get()).as("engine error").isNull();
        }
    }
}

package com.example.millrace.csv;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.millrace.core.MillraceException;
import io.millrace.core.sink.DestinationProviders;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.Engine;
import io.millrace.engine.config.ConfigLoader;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.Statement;
import java.util.ArrayList;
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
        // A second run resumes after the checkpoint the first left; a column added starts a new file for the table.
        try (Running e = new Running(yaml, dir)) {
            pg.execute("shop", "ALTER TABLE public.items ADD COLUMN qty int",
                    "UPDATE public.items SET qty = id % 5 WHERE id <= 50", "INSERT INTO public.items VALUES (2000, 'after', 1, 'n', 7)",
                    "DELETE FROM public.items WHERE id = 3");
            awaitReplayEqualsSource(out, e);
        }
        assertThat(Files.exists(out.resolve("public.items.2.csv"))).as("the new shape's file").isTrue();
        List<String> streamed = new ArrayList<>();
        for (List<String> r : records(out)) {
            if (!r.get(0).equals("0/0")) {
                streamed.add(r.get(0) + "#" + r.get(1));
            }
        }
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

    /** The table as the change log says it is: each file in the order begun, each line applied in turn. */
    private static Map<String, Map<String, String>> replay(Path out) throws Exception {
        Map<String, Map<String, String>> rows = new TreeMap<>();
        for (List<List<String>> lines : committed(out)) {
            List<String> header = lines.get(0);
            for (List<String> line : lines.subList(1, lines.size())) {
                switch (line.get(2)) {
                    case "t" -> rows.clear();
                    case "d" -> rows.remove(line.get(3));
                    default -> {
                        Map<String, String> row = new HashMap<>(rows.getOrDefault(line.get(3), Map.of()));
                        for (int i = 3; i < header.size(); i++) {
                            if (!CsvSink.UNCHANGED.equals(line.get(i))) {
                                row.put(header.get(i), line.get(i));
                            }
                        }
                        rows.put(line.get(3), row);
                    }
                }
            }
        }
        Set<String> columns = new HashSet<>();
        rows.values().forEach(r -> columns.addAll(r.keySet()));
        rows.values().forEach(r -> columns.forEach(c -> r.putIfAbsent(c, null))); // a column added after a row's last line: NULL
        return rows;
    }

    /**
     * What a reader may rely on while the engine writes: the files the state file names, in the order begun, each up
     * to the length it gives (lines beyond it may be cut after a crash and come again).
     */
    private static List<List<List<String>>> committed(Path out) throws Exception {
        Path state = out.resolve(CsvSink.STATE_FILE);
        List<List<List<String>>> files = new ArrayList<>();
        if (!Files.exists(state)) {
            return files;
        }
        for (JsonNode f : new ObjectMapper().readTree(state.toFile()).get("files")) {
            byte[] bytes = Files.readAllBytes(out.resolve(f.get("file").asText()));
            files.add(parse(new String(bytes, 0, f.get("length").asInt(), StandardCharsets.UTF_8)));
        }
        return files;
    }

    private static List<List<String>> records(Path out) throws Exception {
        List<List<String>> all = new ArrayList<>();
        for (List<List<String>> lines : committed(out)) {
            all.addAll(lines.subList(1, lines.size()));
        }
        return all;
    }

    /** RFC 4180 records; an empty unquoted field is null (SQL NULL), a quoted empty one the empty string. */
    private static List<List<String>> parse(String text) {
        List<List<String>> records = new ArrayList<>();
        List<String> record = new ArrayList<>();
        StringBuilder field = new StringBuilder();
        boolean quoted = false;
        boolean wasQuoted = false;
        for (int i = 0; i < text.length(); i++) {
            char ch = text.charAt(i);
            if (quoted) {
                if (ch == '"' && i + 1 < text.length() && text.charAt(i + 1) == '"') {
                    field.append('"');
                    i++;
                } else if (ch == '"') {
                    quoted = false;
                } else {
                    field.append(ch);
                }
            } else if (ch == '"') {
                quoted = true;
                wasQuoted = true;
            } else if (ch == ',' || ch == '\n') {
                record.add(field.length() == 0 && !wasQuoted ? null : field.toString());
                field.setLength(0);
                wasQuoted = false;
                if (ch == '\n') {
                    records.add(record);
                    record = new ArrayList<>();
                }
            } else {
                field.append(ch);
            }
        }
        assertThat(record).as("the file ends with a whole line").isEmpty();
        return records;
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
        public void close() throws Exception {
            engine.stop();
            thread.join(30_000);
            assertThat(thread.isAlive()).as("engine stopped").isFalse();
            assertThat(error.get()).as("engine error").isNull();
        }
    }
}

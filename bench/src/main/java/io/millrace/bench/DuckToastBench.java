package io.millrace.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;

/**
 * The DuckDB destination's upsert of a batch of updates whose TOASTed column did not change (the value comes from the
 * row already there), side by side: the statement before {@code sink-duckdb}'s change (a LEFT JOIN of the whole table)
 * and the one after it (a LEFT JOIN of the rows a semi join with the staged keys selects), on one file, each on a fresh
 * copy of the same 2M-row table, batches of 21,846 staged updates (one in ten with its TOASTed column unchanged), as a
 * user's 2M-row UPDATE brought them. Prints milliseconds per batch.
 *
 * <pre>mvn -q -pl bench -am -DskipTests package
 * java -cp "bench/target/millrace-bench.jar:bench/target/lib/*" io.millrace.bench.DuckToastBench [rows] [batches]</pre>
 */
public final class DuckToastBench {
    private DuckToastBench() {
    }

    public static void main(String[] args) throws Exception {
        long rows = args.length > 0 ? Long.parseLong(args[0]) : 2_000_000;
        int batches = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        Path dir = Files.createTempDirectory("duck-toast-bench");
        String values = "CASE WHEN s._mr_unch IS NOT NULL AND substr(s._mr_unch, 3, 1) = '1' THEN o.t ELSE s.c2 END, "
                + "CASE WHEN s._mr_unch IS NOT NULL AND substr(s._mr_unch, 4, 1) = '1' THEN o.j ELSE s.c3 END, "
                + "CASE WHEN s._mr_unch IS NOT NULL AND substr(s._mr_unch, 5, 1) = '1' THEN o.tz ELSE s.c4 END";
        String conflict = " ON CONFLICT (id) DO UPDATE SET a = EXCLUDED.a, t = EXCLUDED.t, j = EXCLUDED.j, tz = EXCLUDED.tz";
        String head = "INSERT INTO big (id, a, t, j, tz) SELECT CAST(s.c0 AS BIGINT), CAST(s.c1 AS INTEGER), " + values + " FROM stage s";
        String before = head + " LEFT JOIN big o ON s._mr_unch IS NOT NULL AND o.id = CAST(s.f0 AS BIGINT) WHERE NOT s._mr_del" + conflict;
        String after = head + " LEFT JOIN (SELECT * FROM big o2 WHERE EXISTS (SELECT 1 FROM stage s2 WHERE s2._mr_unch IS NOT NULL"
                + " AND o2.id = CAST(s2.f0 AS BIGINT))) o ON s._mr_unch IS NOT NULL AND o.id = CAST(s.f0 AS BIGINT) WHERE NOT s._mr_del" + conflict;
        for (String[] variant : new String[][]{{"before", before}, {"after", after}}) {
            Path file = dir.resolve(variant[0] + ".duckdb");
            try (Connection c = DriverManager.getConnection("jdbc:duckdb:" + file); Statement s = c.createStatement()) {
                s.execute("CREATE TABLE big (id BIGINT PRIMARY KEY, a INTEGER, t VARCHAR, j VARCHAR, tz VARCHAR)");
                s.execute("INSERT INTO big SELECT g, g, 'text ' || g, '{\"k\":' || g || '}', CASE WHEN g % 10 = 0 THEN repeat('z', 2500)"
                        + " ELSE 'short' END FROM range(1, " + (rows + 1) + ") r(g)");
                s.execute("CREATE TABLE stage (c0 VARCHAR, c1 VARCHAR, c2 VARCHAR, c3 VARCHAR, c4 VARCHAR, _mr_del BOOLEAN, _mr_unch VARCHAR,"
                        + " f0 VARCHAR)");
                for (int b = 0; b < batches; b++) {
                    long from = rows / 4 + b * 21_846L;
                    s.execute("DELETE FROM stage");
                    s.execute("INSERT INTO stage SELECT g::VARCHAR, (g + 1)::VARCHAR, 'text ' || g, '{\"k\":' || g || '}', CASE WHEN g % 10 = 0"
                            + " THEN NULL ELSE 'short' END, false, CASE WHEN g % 10 = 0 THEN '00001' ELSE NULL END, g::VARCHAR FROM range("
                            + from + ", " + (from + 21_846) + ") r(g)");
                    long t0 = System.nanoTime();
                    s.execute(variant[1]);
                    System.out.printf("%s batch %d: %d ms%n", variant[0], b, (System.nanoTime() - t0) / 1_000_000);
                }
            }
            Files.deleteIfExists(file);
        }
    }
}

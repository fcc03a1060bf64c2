package io.millrace.examples.embedded;

import io.millrace.api.Change;
import io.millrace.api.Row;
import io.millrace.core.change.Op;
import io.millrace.embedded.EmbeddedPg;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/** What the example's change consumer received is what the source committed: replayed, it gives the source's table. */
class EmbeddedExampleIT {

    @Test
    void theConsumerReceivesWhatTheSourceCommitted(@TempDir Path dir) throws Exception {
        try (EmbeddedPg pg = EmbeddedPg.start()) {
            pg.createDatabase("shop");
            pg.execute("shop", "CREATE TABLE public.orders (id int PRIMARY KEY, item text NOT NULL, qty int NOT NULL)",
                    "INSERT INTO public.orders SELECT g, 'item ' || g, g FROM generate_series(1, 10) g");
            List<Change> received = EmbeddedExample.capture(pg, dir.resolve("checkpoint.json"), 10 + 5, () -> pg.execute("shop",
                    "INSERT INTO public.orders VALUES (11, 'plum', 7)",
                    "BEGIN; UPDATE public.orders SET qty = 40 WHERE id = 4; DELETE FROM public.orders WHERE id = 2; COMMIT",
                    "UPDATE public.orders SET item = 'pear' WHERE id = 11",
                    "DELETE FROM public.orders WHERE id = 10"));

            assertThat(received).hasSize(15);
            assertThat(received.subList(0, 10)).allMatch(c -> c.op() == Op.READ && c.snapshot());
            assertThat(received.subList(10, 15)).extracting(Change::op)
                    .containsExactly(Op.CREATE, Op.UPDATE, Op.DELETE, Op.UPDATE, Op.DELETE);
            assertThat(received.get(10).json()).contains("\"op\":\"c\"").contains("\"item\":\"plum\"");

            Map<Integer, String> replayed = new TreeMap<>();
            for (Change c : received) {
                if (c.op() == Op.DELETE) {
                    replayed.remove((Integer) c.before().get("id"));
                } else {
                    Row r = c.after();
                    replayed.put((Integer) r.get("id"), r.get("item") + "|" + r.get("qty"));
                }
            }
            Map<Integer, String> committed = new TreeMap<>();
            try (Connection conn = pg.connect("shop"); Statement s = conn.createStatement();
                 ResultSet rs = s.executeQuery("SELECT id, item, qty FROM public.orders")) {
                while (rs.next()) {
                    committed.put(rs.getInt(1), rs.getString(2) + "|" + rs.getInt(3));
                }
            }
            assertThat(replayed).isEqualTo(committed).hasSize(9);
        }
    }
}

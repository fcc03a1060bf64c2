package io.millrace.examples.embedded;

import io.millrace.api.Change;
import io.millrace.api.Millrace;
import io.millrace.api.SourceSettings;
import io.millrace.embedded.EmbeddedPg;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Millrace embedded in an application: the changes to {@code public.orders} reach a callback, batch by batch, as
 * {@link Change}s with typed values and their Debezium JSON. Uses only {@code io.millrace.api} (and the embedded
 * PostgreSQL it runs against).
 */
public final class EmbeddedExample {
    private EmbeddedExample() {
    }

    public static void main(String[] args) throws Exception {
        try (EmbeddedPg pg = EmbeddedPg.start()) {
            pg.createDatabase("shop");
            pg.execute("shop", "CREATE TABLE public.orders (id int PRIMARY KEY, item text NOT NULL, qty int NOT NULL)",
                    "INSERT INTO public.orders VALUES (1, 'apple', 3), (2, 'pear', 1)");
            List<Change> received = capture(pg, Files.createTempDirectory("millrace-example").resolve("checkpoint.json"), 5, () -> pg.execute(
                    "shop", "INSERT INTO public.orders VALUES (3, 'plum', 7)", "UPDATE public.orders SET qty = 4 WHERE id = 1",
                    "DELETE FROM public.orders WHERE id = 2"));
            for (Change c : received) {
                System.out.println(c.op() + " " + c.table() + " " + (c.after() != null ? c.after() : c.before()));
            }
        }
    }

    /**
     * Streams {@code public.orders} of the database {@code shop} into a list until {@code expected} changes (snapshot
     * rows included) have arrived, running {@code workload} once the pipeline streams.
     */
    public static List<Change> capture(EmbeddedPg pg, Path checkpointFile, int expected, Runnable workload) throws Exception {
        List<Change> received = Collections.synchronizedList(new ArrayList<>());
        try (Millrace millrace = Millrace.builder()
                .name("shop")
                .source(SourceSettings.builder()
                        .host(pg.host()).port(pg.port()).database("shop").user("postgres")
                        .tables("public.orders")
                        .build())
                .changeConsumer("orders", checkpointFile, batch -> {
                    for (Change c : batch) {
                        System.out.println(c.json()); // Debezium's envelope: before, after, source, op
                    }
                    received.addAll(batch); // returning acknowledges the batch
                })
                .build()) {
            millrace.start();
            await(() -> millrace.status().state().equals("streaming"), millrace);
            workload.run();
            await(() -> received.size() >= expected, millrace);
        } // close(): stops after the last durable checkpoint
        return List.copyOf(received);
    }

    private static void await(java.util.function.BooleanSupplier done, Millrace millrace) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!done.getAsBoolean()) {
            if (millrace.await(Duration.ofMillis(50))) {
                throw new IllegalStateException("the pipeline ended: " + millrace.status().lastError());
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("timed out; the pipeline is " + millrace.status());
            }
        }
    }
}

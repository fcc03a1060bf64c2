package io.millrace.engine.transform;

import io.millrace.core.MillraceException;
import io.millrace.embedded.EmbeddedPg;
import io.millrace.engine.RunningEngine;
import io.millrace.engine.e2e.E2e;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A masked column renamed in the source while streaming: its values under the new name would pass in clear, so the
 * engine stops before any destination gets the row (postgres and jsonl hold no clear value); started again with the
 * rule naming the new column, the held change is passed on, masked.
 */
class MaskedColumnRenamedIT {
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final String CLEAR = "CLEARVAL-777";
    private static EmbeddedPg pg;

    @BeforeAll
    static void start() {
        E2e.init();
        pg = EmbeddedPg.builder().major(17).setting("synchronous_commit", "on").start();
    }

    @AfterAll
    static void stop() {
        if (pg != null) {
            pg.close();
        }
    }

    private static String yaml(Path dir, String column) {
        return E2e.yaml(pg, "ren", "s_ren", List.of("public.people"), "auto", "ren_dst", dir)
                + "\ntransforms:\n  tables:\n    - match: public.people\n      mask: {" + column + ": redact}\n";
    }

    private static String files(Path dir) throws Exception {
        StringBuilder out = new StringBuilder();
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path f : s.filter(p -> p.toString().endsWith(".jsonl")).toList()) {
                out.append(Files.readString(f, StandardCharsets.UTF_8));
            }
        }
        return out.toString();
    }

    @Test
    void aRenamedMaskedColumnIsHeldBackNotLeaked(@TempDir Path dir) throws Exception {
        pg.createDatabase("ren");
        pg.createDatabase("ren_dst");
        pg.execute("ren", "CREATE TABLE public.people (id int PRIMARY KEY, ssn text)", "INSERT INTO public.people VALUES (1, 'one')");
        RunningEngine e = RunningEngine.start(yaml(dir, "ssn"), dir).awaitStreaming(WAIT);
        try (Connection dst = pg.connect("ren_dst")) {
            E2e.awaitRow(dst, "SELECT count(*) FROM public.people WHERE id = 1 AND ssn = '[redacted]'", WAIT);
        }
        pg.execute("ren", "ALTER TABLE public.people RENAME COLUMN ssn TO social",
                "INSERT INTO public.people VALUES (2, '" + CLEAR + "')");
        Throwable err = e.awaitEnd(WAIT);
        assertThat(err).isInstanceOf(MillraceException.class);
        assertThat(err.getMessage()).contains("transforms.tables[0]").contains("'ssn'").contains("no longer has").doesNotContain(CLEAR);
        try (Connection dst = pg.connect("ren_dst")) {
            assertThat(E2e.queryString(dst, "SELECT string_agg(t::text, ',') FROM public.people t")).doesNotContain(CLEAR);
        }
        assertThat(files(dir)).doesNotContain(CLEAR);

        try (RunningEngine again = RunningEngine.start(yaml(dir, "social"), dir).awaitStreaming(WAIT);
             Connection dst = pg.connect("ren_dst")) {
            E2e.awaitRow(dst, "SELECT count(*) FROM public.people WHERE id = 2", WAIT);
            assertThat(E2e.queryString(dst, "SELECT string_agg(t::text, ',') FROM public.people t")).doesNotContain(CLEAR);
            assertThat(files(dir)).doesNotContain(CLEAR).contains("[redacted]");
            assertThat(again.engine().state()).isNotNull();
        }
    }

    /**
     * A table renamed in the source while streaming, its mask rule a pattern the new name does not match: under its new
     * name no rule matches it, and its values would pass in clear. The engine stops before any destination gets the row; a start
     * whose rule still matches only the old name is refused (copied again under no rule, every row would be in clear); with
     * the rule naming the new table, the held change is passed on, masked, and nothing is copied again.
     */
    @Test
    void aTableRenamedAwayFromItsMaskRuleIsHeldBackNotLeaked(@TempDir Path dir) throws Exception {
        pg.createDatabase("tren");
        pg.createDatabase("tren_dst");
        pg.execute("tren", "CREATE TABLE public.patients (id int PRIMARY KEY, ssn text)", "INSERT INTO public.patients VALUES (1, 'one')");
        String before = E2e.yaml(pg, "tren", "s_tren", List.of("public.patients"), "auto", "tren_dst", dir);
        String rule = "\ntransforms:\n  tables:\n    - match: public.pat*\n      mask: {ssn: redact}\n";
        RunningEngine e = RunningEngine.start(before + rule, dir).awaitStreaming(WAIT);
        try (Connection dst = pg.connect("tren_dst")) {
            E2e.awaitRow(dst, "SELECT count(*) FROM public.patients WHERE id = 1 AND ssn = '[redacted]'", WAIT);
        }
        pg.execute("tren", "ALTER TABLE public.patients RENAME TO folks", "INSERT INTO public.folks VALUES (2, '" + CLEAR + "')");
        Throwable err = e.awaitEnd(WAIT);
        assertThat(err).isInstanceOf(MillraceException.class);
        assertThat(err.getMessage()).contains("public.patients was renamed to public.folks").contains("held back").doesNotContain(CLEAR);
        assertThat(((MillraceException) err).kind()).isEqualTo(MillraceException.Kind.CONFIG);
        try (Connection dst = pg.connect("tren_dst")) {
            assertThat(E2e.queryString(dst, "SELECT string_agg(t::text, ',') FROM public.patients t")).doesNotContain(CLEAR);
        }
        assertThat(files(dir)).doesNotContain(CLEAR);

        String after = before.replace("public.patients", "public.folks");
        Throwable start = RunningEngine.start(after + rule, dir).awaitEnd(WAIT);
        assertThat(start).as("a start whose rule still matches only the old name").isInstanceOf(MillraceException.class);
        assertThat(start.getMessage()).contains("public.patients was renamed to public.folks").contains("make a rule match public.folks");
        try (RunningEngine again = RunningEngine.start(after + rule.replace("public.pat*", "public.folks"), dir).awaitStreaming(WAIT);
             Connection dst = pg.connect("tren_dst")) {
            E2e.awaitRow(dst, "SELECT count(*) FROM public.folks WHERE id = 2 AND ssn = '[redacted]'", WAIT);
            assertThat(E2e.queryString(dst, "SELECT string_agg(t::text, ',') FROM public.folks t")).doesNotContain(CLEAR);
            assertThat(files(dir)).doesNotContain(CLEAR);
            assertThat(again.engine().state()).isNotNull();
        }
    }
}

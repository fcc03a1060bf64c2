package io.millrace.cli.demo;

import io.millrace.cli.Main;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/** The README's main command, {@code millrace demo}, end to end with a short load: it verifies itself. */
class DemoIT {
    @Test
    void theDemoRunsOnAnEmbeddedServerAndItsVerificationPasses(@TempDir Path dir) throws Exception {
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        PrintStream original = System.out;
        int code;
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            code = Main.execute("demo", "--seconds", "4", "--rate", "100", "--rows", "3000", "--dir", dir.resolve("demo").toString());
        } finally {
            System.setOut(original);
        }
        String out = captured.toString(StandardCharsets.UTF_8);
        original.println(out);
        assertThat(code).as("exit code").isZero();
        assertThat(out).contains("OK — destination equals source");
        for (String table : new String[] {"public.customers", "public.products", "public.orders", "public.audit_log"}) {
            assertThat(out).containsPattern(java.util.regex.Pattern.quote(table) + "\\s+\\d+ rows\\s+equal");
        }
        assertThat(out).contains("status page: http://127.0.0.1:");
        try (Stream<Path> files = Files.list(dir.resolve("demo").resolve("events"))) {
            assertThat(files.filter(f -> f.getFileName().toString().endsWith(".jsonl")).toList()).isNotEmpty();
        }
    }
}

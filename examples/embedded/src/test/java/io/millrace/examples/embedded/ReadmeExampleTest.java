package io.millrace.examples.embedded;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/** The code of the README's "Embedding Millrace" section is the example's, so it compiles and runs (EmbeddedExampleIT). */
class ReadmeExampleTest {

    private static String stripped(String code) {
        return code.lines().map(String::strip).filter(l -> !l.isEmpty()).collect(Collectors.joining("\n"));
    }

    @Test
    void theReadmeShowsTheExamplesCode() throws Exception {
        String readme = Files.readString(Path.of("../../README.md"));
        int section = readme.indexOf("## Embedding Millrace");
        assertThat(section).as("README section").isPositive();
        int start = readme.indexOf("```java\n", section) + "```java\n".length();
        String snippet = readme.substring(start, readme.indexOf("```", start));
        String example = Files.readString(Path.of("src/main/java/io/millrace/examples/embedded/EmbeddedExample.java"));
        assertThat(stripped(example)).contains(stripped(snippet));
    }
}

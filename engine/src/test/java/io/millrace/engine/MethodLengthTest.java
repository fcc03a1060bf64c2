package io.millrace.engine;

import com.github.javaparser.ParserConfiguration;
import com.github.javaparser.StaticJavaParser;
import com.github.javaparser.ast.CompilationUnit;
import com.github.javaparser.ast.body.CallableDeclaration;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * No method or constructor in the engine module's main code is longer than {@value #LIMIT} lines (from its
 * signature to its closing brace, Javadoc not counted): a longer one mixes stages that read better apart.
 * Parses the sources with JavaParser; prints the longest ones.
 */
class MethodLengthTest {
    static final int LIMIT = 60;

    record Method(String where, int lines) {
    }

    static List<Method> methods(Path root) throws IOException {
        StaticJavaParser.getParserConfiguration().setLanguageLevel(ParserConfiguration.LanguageLevel.JAVA_17);
        List<Method> out = new ArrayList<>();
        try (Stream<Path> files = Files.walk(root)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".java")).sorted().toList()) {
                CompilationUnit cu = StaticJavaParser.parse(f);
                for (CallableDeclaration<?> m : cu.findAll(CallableDeclaration.class)) {
                    int begin = m.getRange().orElseThrow().begin.line; // a Javadoc is the comment's range, not the method's
                    int lines = m.getRange().orElseThrow().end.line - begin + 1;
                    out.add(new Method(root.relativize(f) + ":" + begin + " " + m.getNameAsString(), lines));
                }
            }
        }
        out.sort(Comparator.comparingInt(Method::lines).reversed());
        return out;
    }

    @Test
    void noMethodInTheEngineIsLongerThanTheLimit() throws IOException {
        List<Method> all = methods(Path.of("src/main/java"));
        all.stream().limit(10).forEach(m -> System.out.println("method length: " + m.lines() + " " + m.where()));
        assertThat(all).as("methods longer than %d lines", LIMIT).filteredOn(m -> m.lines() > LIMIT).isEmpty();
    }
}

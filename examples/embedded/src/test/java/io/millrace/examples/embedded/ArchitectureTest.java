package io.millrace.examples.embedded;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaCodeUnit;
import com.tngtech.archunit.core.domain.JavaField;
import com.tngtech.archunit.core.domain.JavaMember;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.domain.JavaType;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

/**
 * The layering the public surface promises, checked on the compiled classes:
 * <ul>
 *   <li>the example reaches Millrace only through {@code io.millrace.api} and the SPI types listed in {@link #SPI};</li>
 *   <li>{@code io.millrace.api} shows nothing else: every public type's public signatures (supertypes, fields,
 *       parameters, return types, type arguments, exceptions) name only {@code io.millrace.api}, the SPI types and the
 *       JDK — its implementation wraps the engine, which is its job;</li>
 *   <li>the pgoutput decoder is pure: it does not depend on JDBC ({@code java.sql}, {@code javax.sql}, the PostgreSQL
 *       driver), directly or through the classes it uses.</li>
 * </ul>
 */
class ArchitectureTest {
    /** The engine's types a user of the public API may see: the destination SPI, events, checkpoints, positions. */
    static final Set<String> SPI = Set.of(
            "io.millrace.core.sink.Sink", "io.millrace.core.sink.SinkReset", "io.millrace.core.sink.DestinationConfig",
            "io.millrace.core.sink.DestinationProvider", "io.millrace.core.sink.DestinationSettings",
            "io.millrace.core.sink.DestinationContext",
            "io.millrace.core.change.ChangeEvent", "io.millrace.core.change.Checkpoint", "io.millrace.core.change.Op",
            "io.millrace.core.schema.RelationInfo", "io.millrace.core.schema.ColumnInfo", "io.millrace.core.schema.TableRef",
            "io.millrace.core.Lsn", "io.millrace.core.Position", "io.millrace.core.MillraceException",
            "io.millrace.core.MillraceException$Kind", "io.millrace.core.Secret");

    private static final JavaClasses MAIN = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("io.millrace");

    /** Whether a type is public surface a user may see: the API, the SPI types, or anything not Millrace's. */
    private static boolean allowed(JavaClass c) {
        JavaClass t = c.isArray() ? c.getBaseComponentType() : c;
        String name = t.getName();
        return !name.startsWith("io.millrace.") || t.getPackageName().equals("io.millrace.api") || SPI.contains(name)
                || name.startsWith("io.millrace.embedded.") || name.startsWith("io.millrace.examples.");
    }

    private static final DescribedPredicate<JavaClass> INTERNAL = DescribedPredicate.describe(
            "are internal to Millrace (outside io.millrace.api and the SPI types)", c -> !allowed(c));

    @Test
    void theExampleUsesOnlyThePublicApi() {
        ArchRule rule = noClasses().that().resideInAPackage("io.millrace.examples..")
                .should().dependOnClassesThat(INTERNAL)
                .because("an application embeds Millrace through io.millrace.api and the SPI types only");
        rule.check(MAIN);
    }

    @Test
    void thePublicApiShowsOnlyItselfAndTheSpi() {
        ArchRule rule = classes().that().resideInAPackage("io.millrace.api").and().arePublic()
                .should(new ArchCondition<JavaClass>("name only io.millrace.api, the SPI types and the JDK in public signatures") {
                    @Override
                    public void check(JavaClass c, ConditionEvents events) {
                        List<String> leaks = new ArrayList<>();
                        c.getRawSuperclass().filter(s -> !allowed(s)).ifPresent(s -> leaks.add("extends " + s.getName()));
                        c.getRawInterfaces().stream().filter(i -> !allowed(i)).forEach(i -> leaks.add("implements " + i.getName()));
                        for (JavaMember m : c.getMembers()) {
                            if (!m.getModifiers().contains(JavaModifier.PUBLIC) && !m.getModifiers().contains(JavaModifier.PROTECTED)) {
                                continue;
                            }
                            List<JavaType> shown = new ArrayList<>();
                            if (m instanceof JavaField f) {
                                shown.add(f.getType());
                            } else if (m instanceof JavaCodeUnit u) {
                                shown.add(u.getReturnType());
                                shown.addAll(u.getParameterTypes());
                                u.getThrowsClause().getTypes().forEach(shown::add);
                            }
                            for (JavaType t : shown) {
                                for (JavaClass raw : t.getAllInvolvedRawTypes()) {
                                    if (!allowed(raw)) {
                                        leaks.add(m.getFullName() + " shows " + raw.getName());
                                    }
                                }
                            }
                        }
                        for (String leak : leaks) {
                            events.add(SimpleConditionEvent.violated(c, leak));
                        }
                    }
                });
        rule.check(MAIN);
    }

    @Test
    void theDecoderDoesNotDependOnJdbc() {
        ArchRule rule = noClasses().that().resideInAPackage("io.millrace.pgoutput..")
                .should().transitivelyDependOnClassesThat().resideInAnyPackage("java.sql..", "javax.sql..", "org.postgresql..")
                .because("the decoder takes bytes and the relation cache built from the stream, never the catalog (STYLE.md)");
        rule.check(MAIN);
    }
}

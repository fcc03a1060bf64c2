package io.millrace.core.fault;

import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The fault spec parser and arming in a running JVM ({@link Faults#arm}); arming at JVM start is exercised by the crash matrix
 * (cli CrashMatrixIT), in JVMs of their own.
 */
class FaultsTest {
    @Test
    void unarmedInThisJvm() {
        assertThat(System.getProperty("millrace.fault")).isNull();
        assertThat(Faults.armed()).isFalse();
        Faults.hit(FaultPoint.SINK_POSTGRES_AFTER_COMMIT); // nothing happens
    }

    @Test
    void specsParse() {
        Map<String, ?> arms = Faults.parse(FaultPoint.SINK_POSTGRES_AFTER_COMMIT.crashAt(3) + ", source.before-feedback:delay:200,pipeline.before-durable:fail");
        assertThat(arms).containsOnlyKeys("sink.postgres.after-commit", "source.before-feedback", "pipeline.before-durable");
        assertThat(arms.get("sink.postgres.after-commit").toString()).contains("CRASH").contains("arg=3");
        assertThat(arms.get("source.before-feedback").toString()).contains("DELAY").contains("arg=200");
        assertThat(arms.get("pipeline.before-durable").toString()).contains("FAIL").contains("arg=1");
        assertThat(Faults.parse("")).isEmpty();
    }

    @Test
    void badSpecsAreRefusedNotIgnored() {
        assertThatThrownBy(() -> Faults.parse("sink.postgres.after-commit")).hasMessageContaining("is not point:action[:arg]");
        assertThatThrownBy(() -> Faults.parse("x:explode")).hasMessageContaining("unknown action 'explode'");
        assertThatThrownBy(() -> Faults.parse("x:crash:many")).hasMessageContaining("'many' in 'x:crash:many' is not a number");
        assertThatThrownBy(() -> Faults.parse("x:crash:0")).hasMessageContaining("the hit number starts at 1");
        assertThatThrownBy(() -> Faults.parse("Sink.Mine:crash")).hasMessageContaining("lower-case words joined by '.' and '-'");
    }

    @Test
    void theBuiltInPointsAreNamedOnceEach() {
        assertThat(FaultPoint.BUILT_IN).extracting(FaultPoint::id).doesNotHaveDuplicates().contains("sink.postgres.before-commit",
                "sink.duckdb.after-commit", "sink.jsonl.before-checkpoint", "pipeline.before-durable", "source.before-feedback",
                "snapshot.mid-chunk");
        assertThat(FaultPoint.SINK_DUCKDB_BEFORE_COMMIT.crashAt(2)).isEqualTo("sink.duckdb.before-commit:crash:2");
        assertThat(FaultPoint.SINK_DUCKDB_BEFORE_COMMIT.crashLine(2)).isEqualTo("millrace fault point sink.duckdb.before-commit: crash at hit 2");
        assertThatThrownBy(() -> new FaultPoint("sink mine")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void armingNeedsAnArmableJvm() {
        assertThat(Faults.armable()).isEqualTo(Boolean.getBoolean(Faults.ARMABLE_PROPERTY));
        if (!Faults.armable()) {
            assertThatThrownBy(() -> Faults.arm("sink.postgres.after-commit:fail")).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("-Dmillrace.fault.test=true");
            return;
        }
        FaultPoint point = new FaultPoint("test.point");
        try (Faults.Armed armed = Faults.arm(point.id() + ":fail:2")) {
            assertThat(Faults.armed()).isTrue();
            Faults.hit(point);
            assertThatThrownBy(() -> Faults.hit(point)).isInstanceOf(Faults.InjectedFault.class)
                    .hasMessage("injected fault at test.point (hit 2)");
            Faults.hit(point);
        }
        assertThat(Faults.armed()).isFalse();
        Faults.hit(point); // disarmed again
    }
}

package io.millrace.core.sink;

import io.millrace.core.MillraceException;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Providers by type and alias: the built-in types first in messages, a type provided twice refused. */
class DestinationProvidersTest {
    /** A provider of {@code type} that configures nothing (only its name and type matter here). */
    private record Named(String type) implements DestinationProvider {
        @Override
        public DestinationConfig configure(String name, DestinationSettings settings, DestinationContext context) {
            throw new UnsupportedOperationException();
        }
    }

    @Test
    void theClassPathHasTheDiscardDestinationUnderBothNames() {
        DestinationProviders installed = DestinationProviders.installed();
        assertThat(installed.types()).contains("discard");
        assertThat(installed.find("null")).containsSame(installed.find("discard").orElseThrow());
        assertThat(installed.find("kinesis")).isEmpty();
    }

    @Test
    void builtInTypesComeFirstInTheirOrderThenTheOthersByName() {
        DestinationProviders p = DestinationProviders.of(List.of(new Named("zeta"), new DiscardProvider(), new Named("csv"),
                new Named("kafka"), new Named("postgres")));
        assertThat(p.types()).containsExactly("postgres", "kafka", "discard", "csv", "zeta");
    }

    @Test
    void aTypeProvidedTwiceIsRefusedNamingBoth() {
        assertThatThrownBy(() -> DestinationProviders.of(List.of(new Named("csv"), new DiscardProvider(), new Named("null"))))
                .isInstanceOf(MillraceException.class).hasMessageContaining("destination type 'null' is provided twice")
                .hasMessageContaining(DiscardProvider.class.getName()).hasMessageContaining("remove one of the jars");
    }
}

package io.millrace.sink.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** A destination url's own {@code options} leave the url (they are sent first in the startup packet, Millrace's after). */
class SessionUrlTest {
    @Test
    void theOptionsParameterLeavesTheUrlAndTheOthersStay() {
        String base = "jdbc:postgresql://h:5432/db";
        assertThat(PostgresSink.withoutOptions(base)).isEqualTo(base);
        assertThat(PostgresSink.withoutOptions(base + "?options=-c%20search_path%3Dapp")).isEqualTo(base);
        assertThat(PostgresSink.withoutOptions(base + "?options=-c%20a%3D1&sslmode=require")).isEqualTo(base + "?sslmode=require");
        assertThat(PostgresSink.withoutOptions(base + "?sslmode=require&options=-c%20a%3D1&tcpKeepAlive=true"))
                .isEqualTo(base + "?sslmode=require&tcpKeepAlive=true");
        assertThat(PostgresSink.withoutOptions(base + "?sslmode=require&optionsx=1")).as("only the parameter of that name")
                .isEqualTo(base + "?sslmode=require&optionsx=1");
    }
}

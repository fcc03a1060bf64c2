package io.millrace.core.types;

import org.junit.jupiter.api.Test;

import static io.millrace.core.types.JsonFormTest.json;
import static io.millrace.core.types.TextAndBinaryFormsTest.bin;
import static io.millrace.core.types.TextAndBinaryFormsTest.c;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** xid, cid, xid8, tid, pg_snapshot: text and binary give one value. */
class SystemCodecsTest {

    @Test
    void transactionIds() {
        assertThat(c("xid").decodeText("4294967295")).isEqualTo(4294967295L);
        assertThat(bin("xid", "ffffffff")).isEqualTo(4294967295L);
        assertThat(bin("cid", "00000007")).isEqualTo(c("cid").decodeText("7"));
        assertThat(bin("xid8", "0000000100000002")).isEqualTo(c("xid8").decodeText("4294967298"));
        assertThat(json(c("xid8"), 4294967298L)).isEqualTo("4294967298");
        assertThatThrownBy(() -> bin("xid8", "8000000000000000")).hasMessageContaining("out of range");
    }

    @Test
    void tidAndSnapshots() {
        assertThat(bin("tid", "ffffffff" + "ffff")).isEqualTo("(4294967295,65535)");
        assertThat(c("tid").decodeText("(0,1)")).isEqualTo(bin("tid", "00000000" + "0001"));
        String snap = "00000002" + "000000000000000a" + "0000000000000014" + "000000000000000a" + "000000000000000e";
        assertThat(bin("pg_snapshot", snap)).isEqualTo("10:20:10,14");
        assertThat(bin("txid_snapshot", "00000000" + "000000000000000a" + "000000000000000a")).isEqualTo("10:10:");
        assertThat(json(c("pg_snapshot"), "10:10:")).isEqualTo("\"10:10:\"");
        assertThatThrownBy(() -> bin("pg_snapshot", "00000003" + "000000000000000a" + "0000000000000014"))
                .hasMessageContaining("does not match the length");
        assertThatThrownBy(() -> c("tid").decodeText("(0;1)")).hasMessageContaining("invalid tid text value");
    }
}

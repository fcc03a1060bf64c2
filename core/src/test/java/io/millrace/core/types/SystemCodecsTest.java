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

    /** int2vector's text is "1 2 3", not an array's "{1,2,3}": it decoded to an error before (read in text mode). */
    @Test
    void int2vectorAndOidvector() {
        TypeCodec v = c("int2vector");
        Object value = v.decodeText("1 -2 3");
        assertThat(value).isEqualTo(new PgArray(new int[] {3}, new int[] {0}, new Object[] {c("int2").decodeText("1"), c("int2").decodeText("-2"), c("int2").decodeText("3")}));
        assertThat(v.toPgText(value)).isEqualTo("1 -2 3");
        assertThat(json(v, value)).isEqualTo("[1,-2,3]");
        assertThat(v.decodeText("")).isEqualTo(PgArray.EMPTY);
        // array_send of int2vector '7 8': 1 dimension, no NULLs, element oid 21, 2 elements from lower bound 0
        assertThat(bin("int2vector", "00000001" + "00000000" + "00000015" + "00000002" + "00000000"
                + "00000002" + "0007" + "00000002" + "0008")).isEqualTo(v.decodeText("7 8"));
        assertThat(bin("int2vector", "00000001" + "00000000" + "00000015" + "00000000" + "00000000")).as("empty").isEqualTo(PgArray.EMPTY);
        assertThat(c("oidvector").toPgText(c("oidvector").decodeText("4294967295 0"))).isEqualTo("4294967295 0");
        assertThatThrownBy(() -> v.decodeText("1 x")).hasMessageContaining("invalid int2vector text value '1 x'");
    }
}

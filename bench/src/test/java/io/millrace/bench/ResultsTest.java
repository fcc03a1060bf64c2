package io.millrace.bench;

import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ResultsTest {
    private static Measurement m(long rows, double seconds, long rssMb) {
        return new Measurement(rows, (long) (seconds * 1e9), 250_000_000L, 2_000_000_000L, rssMb * 1024, 1.5, null);
    }

    @Test
    void ratiosComeFromTheSameRunsLimitAndFastestDebezium() {
        Results r = new Results();
        r.add(Contestant.byId("snap-copy"), m(1000, 1.0, 10));              // 1000 rows/s
        r.add(Contestant.byId("snap-millrace-null"), m(1000, 2.0, 300));    // 500 rows/s
        r.add(Contestant.byId("snap-debezium-noschema"), m(1000, 4.0, 400)); // 250 rows/s: the fastest Debezium
        r.add(Contestant.byId("snap-debezium-schema"), m(1000, 8.0, 500));   // 125 rows/s
        List<String[]> rows = r.rows();
        String[] millrace = rows.get(1);
        assertThat(millrace[1]).isEqualTo("Millrace → null");
        assertThat(millrace[6]).isEqualTo("500");
        assertThat(millrace[8]).isEqualTo("0.50×");
        assertThat(millrace[9]).isEqualTo("2.00×");
        assertThat(millrace[10]).isEqualTo("300");
        assertThat(rows.get(3)[9]).isEqualTo("0.50×");
        assertThat(rows.get(0)[8]).isEqualTo("1.00×");
        assertThat(r.markdown()).contains("| snapshot | Millrace → null | 1/1 | 1,000 | 2.00 | 0.25 | 500 | - | 0.50× | 2.00× | 300 | 2.0 | 1.5 |")
                .doesNotContain("Every run");
        assertThat(r.text()).contains("PostgreSQL COPY TO STDOUT (limit)");
    }

    @Test
    void repetitionsReportTheMedianRunItsRangeAndEveryRun() {
        Results r = new Results();
        Contestant copy = Contestant.byId("snap-copy");
        Contestant millrace = Contestant.byId("snap-millrace-null");
        r.add(copy, m(1000, 1.0, 10));
        r.add(copy, m(1000, 0.5, 12));
        r.add(copy, m(1000, 2.0, 11)); // median 1000 rows/s
        r.add(millrace, m(1000, 4.0, 300));
        r.add(millrace, Measurement.failed("boom", 2.0));
        r.add(millrace, m(1000, 1.0, 350)); // successful: 250 and 1000 rows/s, the lower middle is 250
        String[] c = r.rows().get(0);
        assertThat(c[2]).isEqualTo("3/3");
        assertThat(c[6]).isEqualTo("1,000");
        assertThat(c[7]).isEqualTo("500–2,000");
        assertThat(c[10]).isEqualTo("12"); // peak RSS: the highest of the runs
        String[] m = r.rows().get(1);
        assertThat(m[2]).isEqualTo("2/3");
        assertThat(m[6]).isEqualTo("250");
        assertThat(m[8]).isEqualTo("0.25×");
        assertThat(m[12]).contains("1 failed: boom");
        assertThat(r.allOk()).isFalse();
        assertThat(r.markdown()).contains("Every run").contains("| snap-millrace-null | 2 | - | FAILED: boom | - | 2.0 |");
    }

    @Test
    void binaryStreamingComparesWithBinaryPgRecvlogicalAndFailuresShowTheirCause() {
        Results r = new Results();
        r.add(Contestant.byId("stream-recvlogical"), m(100, 1.0, 5));
        r.add(Contestant.byId("stream-recvlogical-binary"), m(100, 0.5, 5));
        r.add(Contestant.byId("stream-millrace-null-binary"), m(100, 1.0, 200));
        r.add(Contestant.byId("stream-debezium-schema"), Measurement.failed("timed out", 3.0));
        List<String[]> rows = r.rows();
        assertThat(rows.get(2)[8]).isEqualTo("0.50×"); // vs the binary limit (200 rows/s), not the text one
        assertThat(rows.get(2)[9]).isEqualTo("-");     // no Debezium succeeded
        assertThat(rows.get(3)[12]).contains("FAILED: timed out");
    }

    @Test
    void measurementLineRoundTrips() {
        Measurement a = new Measurement(1_000_000, 12_345_678_901L, 1_500_000_000L, 9_000_000_000L, 654_321, 0, null);
        Measurement b = Measurement.parse("noise", 0);
        assertThat(b).isNull();
        assertThat(Measurement.parse(a.line(), 2.5)).isEqualTo(new Measurement(1_000_000, 12_345_678_901L, 1_500_000_000L, 9_000_000_000L, 654_321, 2.5,
                null));
    }

    @Test
    void optionsSelectByPrefixAndRejectUnknownOptions() {
        Options o = Options.parse(List.of("--rows", "200_000", "--repeat", "3", "--only", "snap-,stream-recv", "--skip", "snap-debezium-schema"),
                Path.of("r.md"));
        assertThat(o.rows()).isEqualTo(200_000);
        assertThat(o.repeat()).isEqualTo(3);
        assertThat(Contestant.all().stream().filter(o::selected).map(Contestant::id))
                .containsExactly("snap-copy", "snap-millrace-null", "snap-millrace-jsonl", "snap-debezium-noschema",
                        "stream-recvlogical", "stream-recvlogical-binary");
        assertThatThrownBy(() -> Options.parse(List.of("--rowz", "1"), Path.of("r.md"))).hasMessageContaining("unknown option --rowz");
    }
}

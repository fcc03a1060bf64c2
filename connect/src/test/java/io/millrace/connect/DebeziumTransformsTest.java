package io.millrace.connect;

import io.debezium.transforms.ByLogicalTableRouter;
import io.debezium.transforms.ExtractNewRecordState;
import io.millrace.core.Lsn;
import io.millrace.core.Position;
import io.millrace.core.change.ChangeEvent;
import io.millrace.core.change.Op;
import io.millrace.core.schema.ColumnInfo;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.core.schema.TypeResolver;
import io.millrace.core.types.Codecs;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;
import org.junit.jupiter.api.Test;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** Debezium's own single message transforms (debezium-connect-plugins 3.6.1) work on Millrace's records. */
class DebeziumTransformsTest {
    private static final RelationInfo ORDERS = new RelationInfo(16400, new TableRef("public", "orders"), 'd', List.of(
            new ColumnInfo("id", Codecs.builtin(23), -1, true), new ColumnInfo("customer", Codecs.builtin(25), -1, false),
            new ColumnInfo("total", Codecs.builtin(1700), -1, false)), TypeResolver.builtinsOnly());

    private static ChangeEvent event(Op op, Object[] before, Object[] after) {
        return new ChangeEvent(op, ORDERS, before, after, Lsn.of(2000), new Position(Lsn.of(2100), 3), 771, 1_700_000_000_000_000L, false);
    }

    private static List<SourceRecord> records(ChangeEvent e) {
        List<SourceRecord> out = new ArrayList<>();
        new RecordMaker("shop", "shopdb", true, true).add(e, Map.of("checkpoint", "{}"), out);
        return out;
    }

    @Test
    void extractNewRecordStateFlattensToTheRow() {
        try (ExtractNewRecordState<SourceRecord> unwrap = new ExtractNewRecordState<>()) {
            unwrap.configure(Map.of("add.fields", "op,lsn,table", "delete.tombstone.handling.mode", "rewrite"));
            SourceRecord insert = records(event(Op.CREATE, null, new Object[] {1001, "Ada", new BigDecimal("42.50")})).get(0);
            Struct row = (Struct) unwrap.apply(insert).value();
            assertThat(row.getInt32("id")).isEqualTo(1001);
            assertThat(row.getString("customer")).isEqualTo("Ada");
            assertThat(row.getString("total")).isEqualTo("42.50");
            assertThat(row.getString("__op")).isEqualTo("c");
            assertThat(row.getInt64("__lsn")).isEqualTo(2000L);
            assertThat(row.getString("__table")).isEqualTo("orders");

            List<SourceRecord> delete = records(event(Op.DELETE, new Object[] {1001, null, null}, null));
            Struct deleted = (Struct) unwrap.apply(delete.get(0)).value();
            assertThat(deleted.getInt32("id")).isEqualTo(1001);
            assertThat(deleted.getString("__deleted")).isEqualTo("true");
            assertThat(unwrap.apply(delete.get(1))).as("the tombstone after the rewrite is dropped").isNull();
        }
    }

    @Test
    void byLogicalTableRouterReroutesAndKeepsKeysApart() {
        try (ByLogicalTableRouter<SourceRecord> router = new ByLogicalTableRouter<>()) {
            router.configure(Map.of("topic.regex", "shop\\.public\\.(.*)", "topic.replacement", "shop.all"));
            SourceRecord routed = router.apply(records(event(Op.CREATE, null, new Object[] {7, "Bo", BigDecimal.ONE})).get(0));
            assertThat(routed.topic()).isEqualTo("shop.all");
            assertThat(((Struct) routed.key()).getString("__dbz__physicalTableIdentifier")).isEqualTo("shop.public.orders");
            assertThat(((Struct) routed.key()).getInt32("id")).isEqualTo(7);
            assertThat(((Struct) ((Struct) routed.value()).get("after")).getString("customer")).isEqualTo("Bo");
        }
    }
}

package io.millrace.engine;

import io.millrace.core.MillraceException;
import io.millrace.core.MillraceException.Kind;
import io.millrace.core.schema.RelationInfo;
import io.millrace.core.schema.TableRef;
import io.millrace.snapshot.online.OnlineSnapshotter;
import io.millrace.source.Catalog;
import io.millrace.source.CatalogTypeResolver;
import io.millrace.source.PgConnections;
import io.millrace.source.PgErrors;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;

/** The source catalog as online snapshots see it: each look-up on a connection of its own. Any thread. */
final class OnlineCatalog implements OnlineSnapshotter.Catalog {
    private final PgConnections conns;
    private final CatalogTypeResolver types;

    OnlineCatalog(PgConnections conns, CatalogTypeResolver types) {
        this.conns = conns;
        this.types = types;
    }

    @Override
    public OnlineSnapshotter.Target resolve(TableRef table) {
        try (Connection c = conns.open()) {
            Catalog.TableInfo info = Catalog.table(c, table);
            if (info == null) {
                throw new MillraceException(Kind.CONFIG, "table " + table.sql() + " does not exist in the source database");
            }
            RelationInfo r = Catalog.relation(c, table, types);
            return new OnlineSnapshotter.Target(r, Catalog.keyColumns(c, info.oid()), info.partitioned());
        } catch (SQLException e) {
            throw PgErrors.translate("reading table " + table, e);
        }
    }

    @Override
    public TableRef nameOf(int oid) {
        try (Connection c = conns.open()) {
            return Catalog.tablesByOid(c, List.of(oid)).get(oid);
        } catch (SQLException e) {
            throw PgErrors.translate("looking up table oid " + Integer.toUnsignedString(oid), e);
        }
    }
}

package io.millrace.migrate;

/**
 * The partitioned tables of {@link MigratePartitionedIT} from PostgreSQL 14 to PostgreSQL 17: the partition tree, its
 * indexes and constraints are read back alike on both (the catalog functions print them the same), the rows land in the
 * same partitions.
 */
class MigratePartitionedUpgradeIT extends MigratePartitionedIT {
    @Override
    int sourceMajor() {
        return 14;
    }

    @Override
    int targetMajor() {
        return 17;
    }
}

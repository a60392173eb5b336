-- PaddleBoard points in blocks: one row per batch written (a run of one
-- series' points in step order, encoded by `paddleboard::block`), instead of
-- one row per point, which made the database the bottleneck of ingestion.
-- Blocks of a series never overlap: first_step > the previous last_step.
-- The rows of metric_points are moved here by the console at start
-- (`PointStore::convert_row_points`), then that table stays empty.
CREATE TABLE metric_blocks (
    series_id  BIGINT  NOT NULL REFERENCES metric_series (id) ON DELETE CASCADE,
    first_step BIGINT  NOT NULL,
    last_step  BIGINT  NOT NULL,
    points     BIGINT  NOT NULL,
    data       BLOB    NOT NULL,
    PRIMARY KEY (series_id, first_step)
);
-- A rowid table, unlike metric_points: SQLite advises against WITHOUT ROWID
-- for rows this large (a block holds up to 16,384 points, 384 KB).

-- The value at last_step (NULL for NaN), what a pipeline's condition reads.
ALTER TABLE metric_series ADD COLUMN last_value DOUBLE PRECISION;
UPDATE metric_series SET last_value = (
    SELECT p.value FROM metric_points p
    WHERE p.series_id = metric_series.id ORDER BY p.step DESC LIMIT 1
);

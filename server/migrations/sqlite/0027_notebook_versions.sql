-- Versions of the notebook files in a notebook's workspace: each save the
-- console's proxy passed on, each checkpoint, the files as they were when
-- it stopped, each restore. The file itself is in the object store under
-- notebook-versions/<notebook_id>/<sha256>.ipynb (equal contents share one
-- object); `author` is the address of who saved (or what the console did)
-- as it was then. Gone with the notebook.
CREATE TABLE notebook_versions (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    notebook_id    BIGINT  NOT NULL REFERENCES notebooks (id) ON DELETE CASCADE,
    path           TEXT    NOT NULL,
    at             BIGINT  NOT NULL,
    author         TEXT    NOT NULL,
    reason         TEXT    NOT NULL,
    sha256         TEXT    NOT NULL,
    bytes          BIGINT  NOT NULL,
    cells          BIGINT  NOT NULL,
    restored_from  BIGINT
);
CREATE INDEX notebook_versions_by_file ON notebook_versions (notebook_id, path, id);

-- Environment profiles: an image and a list of pip requirements, saved in
-- immutable versions like templates. `spec` is the EnvironmentSpec as
-- JSON. `public` is kept the same on every version of a name: a site
-- admin publishes a name, not one version.
CREATE TABLE environments (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id  BIGINT  NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name        TEXT    NOT NULL,
    version     BIGINT  NOT NULL,
    spec        TEXT    NOT NULL,
    public      BIGINT  NOT NULL DEFAULT 0,
    created_by  TEXT    NOT NULL,
    created_at  BIGINT  NOT NULL,
    UNIQUE (account_id, name, version)
);

-- Templates are shared the same way.
ALTER TABLE templates ADD COLUMN public BIGINT NOT NULL DEFAULT 0;

-- The account that owns what the console ships (the "paddle-cpu" and
-- "minimal" environments, the template library): no one signs in to it,
-- and taking its name keeps anyone else from signing up as it.
INSERT INTO accounts (name, namespace, created_at) VALUES ('paddlecloud', 'pc-paddlecloud', 0) ON CONFLICT DO NOTHING;

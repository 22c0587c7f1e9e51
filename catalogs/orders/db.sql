-- The orders domain's database (seed 004): every trial starts from its own copy.
-- Two orders of the signed-in customer (alice), one of another customer (bob).
CREATE TABLE orders (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'shipped', 'cancelled')),
    address TEXT NOT NULL,
    item TEXT NOT NULL
);
INSERT INTO orders (id, owner, status, address, item) VALUES
    ('o1', 'alice', 'pending', 'Oak 1', 'desk lamp'),
    ('o2', 'alice', 'pending', 'Oak 1', 'office chair'),
    ('o3', 'bob', 'pending', 'Elm 5', 'bookshelf');

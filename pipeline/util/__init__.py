"""Small leaves every room may use: hashing, redaction, secrets, the code version."""

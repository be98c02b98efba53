//! The integration tests arrive with the session.

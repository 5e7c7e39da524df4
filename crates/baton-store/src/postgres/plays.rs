//! [`PlayStore`] for PostgreSQL: the `plays` table.

use super::PgStore;
use crate::Result;
use crate::plays::{PlayStore, json, play_of};
use baton_core::play::Play;

const PUT: &str = "INSERT INTO plays (name, updated_at, data) VALUES ($1, $2, $3)
     ON CONFLICT (name) DO UPDATE SET updated_at = excluded.updated_at, data = excluded.data";
const ALL: &str = "SELECT name, data FROM plays ORDER BY updated_at DESC, name";

impl PlayStore for PgStore {
    fn put_play(&self, p: &Play) -> Result<()> {
        let data = json(p);
        self.run(|conn, _| {
            conn.db()
                .execute(PUT, &[&p.name, &p.updated_at.millis(), &data])?;
            Ok(())
        })
    }

    fn plays(&self) -> Result<Vec<Play>> {
        let rows = self.run(|conn, _| Ok(conn.db().query(ALL, &[])?))?;
        rows.iter()
            .map(|r| play_of(r.get::<_, &str>(0), r.get::<_, &str>(1)))
            .collect()
    }
}

//! A connection and its statement cache: every statement is prepared once
//! per connection and kept, on a client or inside a transaction.

use crate::Error;
use postgres::types::ToSql;
use postgres::{Client, Row, Statement};
use std::collections::HashMap;

/// A connection and the statements prepared on it.
pub(super) struct Conn {
    pub(super) client: Client,
    pub(super) stmts: HashMap<&'static str, Statement>,
}

/// Why an attempt at an operation failed.
pub(super) enum Fail {
    /// A final answer (`NotFound`, `LeaseLost`, …).
    Store(Error),
    /// A database error: the connection may be lost (then retried).
    Pg(postgres::Error),
    /// A connection loss the tests inject (see [`fault_point`]).
    #[cfg(test)]
    Lost,
}

impl From<postgres::Error> for Fail {
    fn from(e: postgres::Error) -> Self {
        Fail::Pg(e)
    }
}

impl From<Error> for Fail {
    fn from(e: Error) -> Self {
        Fail::Store(e)
    }
}

pub(super) type Attempt<T> = std::result::Result<T, Fail>;
type Params<'a> = [&'a (dyn ToSql + Sync)];

/// Something statements run on: a client or a transaction.
pub(super) trait Session {
    fn prepare_sql(&mut self, sql: &str) -> Result<Statement, postgres::Error>;
    fn run_execute(&mut self, s: &Statement, p: &Params<'_>) -> Result<u64, postgres::Error>;
    fn run_query(&mut self, s: &Statement, p: &Params<'_>) -> Result<Vec<Row>, postgres::Error>;
}

impl Session for Client {
    fn prepare_sql(&mut self, sql: &str) -> Result<Statement, postgres::Error> {
        self.prepare(sql)
    }
    fn run_execute(&mut self, s: &Statement, p: &Params<'_>) -> Result<u64, postgres::Error> {
        self.execute(s, p)
    }
    fn run_query(&mut self, s: &Statement, p: &Params<'_>) -> Result<Vec<Row>, postgres::Error> {
        self.query(s, p)
    }
}

impl Session for postgres::Transaction<'_> {
    fn prepare_sql(&mut self, sql: &str) -> Result<Statement, postgres::Error> {
        self.prepare(sql)
    }
    fn run_execute(&mut self, s: &Statement, p: &Params<'_>) -> Result<u64, postgres::Error> {
        self.execute(s, p)
    }
    fn run_query(&mut self, s: &Statement, p: &Params<'_>) -> Result<Vec<Row>, postgres::Error> {
        self.query(s, p)
    }
}

/// A session with the connection's statement cache.
pub(super) struct Db<'a, S: Session> {
    s: &'a mut S,
    stmts: &'a mut HashMap<&'static str, Statement>,
}

impl<S: Session> Db<'_, S> {
    fn stmt(&mut self, sql: &'static str) -> Result<Statement, postgres::Error> {
        if let Some(s) = self.stmts.get(sql) {
            return Ok(s.clone());
        }
        let s = self.s.prepare_sql(sql)?;
        self.stmts.insert(sql, s.clone());
        Ok(s)
    }

    pub(super) fn execute(
        &mut self,
        sql: &'static str,
        p: &Params<'_>,
    ) -> Result<u64, postgres::Error> {
        let s = self.stmt(sql)?;
        self.s.run_execute(&s, p)
    }

    pub(super) fn query(
        &mut self,
        sql: &'static str,
        p: &Params<'_>,
    ) -> Result<Vec<Row>, postgres::Error> {
        let s = self.stmt(sql)?;
        self.s.run_query(&s, p)
    }

    pub(super) fn query_opt(
        &mut self,
        sql: &'static str,
        p: &Params<'_>,
    ) -> Result<Option<Row>, postgres::Error> {
        Ok(self.query(sql, p)?.into_iter().next())
    }

    pub(super) fn query_one(&mut self, sql: &'static str, p: &Params<'_>) -> Attempt<Row> {
        self.query_opt(sql, p)?
            .ok_or_else(|| Fail::Store(Error::Postgres(format!("no row from: {sql}"))))
    }
}

impl Conn {
    pub(super) fn db(&mut self) -> Db<'_, Client> {
        Db {
            s: &mut self.client,
            stmts: &mut self.stmts,
        }
    }
}

/// Runs `f` in a transaction on `conn`, committing if it returns `Ok`.
pub(super) fn in_tx<T>(
    conn: &mut Conn,
    f: impl FnOnce(&mut Db<'_, postgres::Transaction<'_>>) -> Attempt<T>,
) -> Attempt<T> {
    let mut tx = conn.client.transaction()?;
    let v = f(&mut Db {
        s: &mut tx,
        stmts: &mut conn.stmts,
    })?;
    fault_point(Fault::BeforeCommit)?;
    tx.commit()?;
    fault_point(Fault::AfterCommit)?;
    Ok(v)
}

/// Where tests make the connection look lost, just before or just after a
/// write was committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fault {
    BeforeCommit,
    AfterCommit,
}

#[cfg(not(test))]
#[inline(always)]
pub(super) fn fault_point(_: Fault) -> Attempt<()> {
    Ok(())
}

#[cfg(test)]
pub(super) fn fault_point(f: Fault) -> Attempt<()> {
    if super::tests::hit(f) {
        Err(Fail::Lost)
    } else {
        Ok(())
    }
}

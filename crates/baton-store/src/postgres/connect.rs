//! Connecting: the first connection and its migrations, reconnecting with
//! backoff, the listening connection, and telling a lost connection from a
//! final error (with the URL's places and redaction for messages).

use super::PgStore;
use super::conn::{Attempt, Conn, Fail};
use super::sql::{CHANNEL, MIGRATIONS, SCHEMA_LOCK, WORK_THERE};
use crate::{Error, Result};
use postgres::config::Host;
use postgres::{Client, Config};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl PgStore {
    /// Connects to `url`, runs migrations, and reconnects (with backoff, for
    /// up to `reconnect_for`) when the server goes away later.
    ///
    /// The first connection is tried once (a wrong URL or a server that is
    /// down is reported at once, as [`Error::Connect`]), except that a
    /// server still starting up is waited for, up to `reconnect_for`.
    pub fn connect(url: &str, reconnect_for: Duration) -> Result<PgStore> {
        let invalid = |reason: String| Error::InvalidUrl {
            url: redact(url),
            reason,
        };
        let (rest, tls) = super::tls::split(url).map_err(invalid)?;
        let connector = tls.connector().map_err(invalid)?;
        let mut config: Config = rest
            .parse()
            .map_err(|e: postgres::Error| Error::InvalidUrl {
                url: redact(url),
                reason: std::error::Error::source(&e)
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| e.to_string()),
            })?;
        // A server that vanishes without closing the connection (a network
        // partition, a machine powered off) is noticed in about half a
        // minute instead of TCP's hours, and the reconnect loop takes over.
        // Settings in the URL win.
        if config.get_keepalives_idle() == Duration::from_secs(2 * 60 * 60) {
            config.keepalives_idle(Duration::from_secs(10));
        }
        if config.get_keepalives_interval().is_none() {
            config.keepalives_interval(Duration::from_secs(5));
        }
        if config.get_keepalives_retries().is_none() {
            config.keepalives_retries(3);
        }
        if config.get_tcp_user_timeout().is_none() {
            config.tcp_user_timeout(Duration::from_secs(30));
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        if config.get_application_name().is_none() {
            config.application_name("baton");
        }
        config.ssl_mode(tls.ssl_mode());
        let (target, place) = places(&config);
        let store = PgStore {
            config,
            tls: connector,
            target,
            place,
            reconnect_for,
            conn: Mutex::new(None),
            listener: Mutex::new(None),
        };
        let deadline = Instant::now() + reconnect_for;
        let mut delay = Duration::from_millis(50);
        let mut conn = loop {
            match store.open(None) {
                Ok(c) => break c,
                Err(e) if code_is(&e, &["57P03"]) && Instant::now() < deadline => {
                    std::thread::sleep(delay.min(deadline - Instant::now()));
                    delay = (delay * 2).min(Duration::from_secs(2));
                }
                Err(e) => {
                    return Err(Error::Connect {
                        target: store.target.clone(),
                        reason: plain_reason(&e, &store.config),
                    });
                }
            }
        };
        store.refuse_transaction_pooling(&mut conn)?;
        match store.migrate(&mut conn) {
            Ok(()) => {}
            Err(Fail::Store(e)) => return Err(e),
            Err(Fail::Pg(e)) => return Err(store.pg_error(&e)),
            #[cfg(test)]
            Err(Fail::Lost) => unreachable!("no fault is injected into migrations"),
        }
        *store.conn.lock().unwrap_or_else(|p| p.into_inner()) = Some(conn);
        Ok(store)
    }

    /// Refuses a pooler that gives a session's statements to several
    /// server connections. `conn`'s server connection, once its statement
    /// is done, is free again under such a pooler, and handed (most
    /// recently used first, PgBouncer's default) to the next client that
    /// asks: a second connection then finds the same server process, or
    /// `conn` finds another. With a session of its own, neither happens.
    fn refuse_transaction_pooling(&self, conn: &mut Conn) -> Result<()> {
        let pid = |c: &mut postgres::Client| -> Result<Option<i32>, postgres::Error> {
            Ok(c.simple_query("SELECT pg_backend_pid()")?
                .into_iter()
                .find_map(|m| match m {
                    postgres::SimpleQueryMessage::Row(r) => r.get(0).and_then(|v| v.parse().ok()),
                    _ => None,
                }))
        };
        let mut check = || -> Result<bool, postgres::Error> {
            let mine = pid(&mut conn.client)?;
            let mut other = self.open(Some(Duration::from_secs(10)))?;
            let theirs = pid(&mut other.client)?;
            let again = pid(&mut conn.client)?;
            Ok(mine.is_some() && (theirs == mine || again != mine))
        };
        match check() {
            Ok(false) => Ok(()),
            Ok(true) => Err(Error::TransactionPooling {
                target: self.target.clone(),
            }),
            Err(e) => Err(self.pg_error(&e)),
        }
    }

    fn open(&self, timeout: Option<Duration>) -> Result<Conn, postgres::Error> {
        let client = match timeout {
            None => self.config.connect(self.tls.clone())?,
            Some(t) => self
                .config
                .clone()
                .connect_timeout(t.max(Duration::from_millis(100)))
                .connect(self.tls.clone())?,
        };
        Ok(Conn {
            client,
            stmts: HashMap::new(),
        })
    }

    /// Brings the schema up to date under the advisory lock.
    fn migrate(&self, conn: &mut Conn) -> Attempt<()> {
        let mut tx = conn.client.transaction()?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])?;
        tx.batch_execute("CREATE TABLE IF NOT EXISTS baton_schema (version INT NOT NULL)")?;
        let found: Option<i32> = tx
            .query_one("SELECT MAX(version) FROM baton_schema", &[])?
            .get(0);
        let found = i64::from(found.unwrap_or(0));
        if found > MIGRATIONS.len() as i64 {
            return Err(Fail::Store(Error::NewerSchema {
                path: self.place.clone(),
                found,
                known: MIGRATIONS.len(),
            }));
        }
        if found < MIGRATIONS.len() as i64 {
            for m in &MIGRATIONS[found as usize..] {
                tx.batch_execute(m)?;
            }
            tx.execute("DELETE FROM baton_schema", &[])?;
            tx.execute(
                "INSERT INTO baton_schema (version) VALUES ($1)",
                &[&(MIGRATIONS.len() as i32)],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Runs one operation, reconnecting and retrying it when the connection
    /// is lost. `op` is told whether an earlier attempt lost its connection
    /// (and so may or may not have committed).
    pub(super) fn run<T>(&self, mut op: impl FnMut(&mut Conn, bool) -> Attempt<T>) -> Result<T> {
        let mut guard = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        // Set once a connection was lost: until when to keep trying, and why.
        let mut lost: Option<(Instant, String)> = None;
        loop {
            if guard.is_none() {
                let (deadline, why) = lost
                    .clone()
                    .unwrap_or_else(|| (Instant::now() + self.reconnect_for, String::new()));
                *guard = Some(self.reconnect(deadline, &why)?);
            }
            let conn = guard.as_mut().expect("connected above");
            let why = match op(conn, lost.is_some()) {
                Ok(v) => return Ok(v),
                Err(Fail::Store(e)) => return Err(e),
                Err(Fail::Pg(e)) if connection_lost(&e) => plain_reason(&e, &self.config),
                Err(Fail::Pg(e)) => return Err(self.pg_error(&e)),
                #[cfg(test)]
                Err(Fail::Lost) => "injected connection loss".to_string(),
            };
            *guard = None;
            let deadline = lost
                .map(|(d, _)| d)
                .unwrap_or_else(|| Instant::now() + self.reconnect_for);
            lost = Some((deadline, why));
        }
    }

    /// Connects again, with backoff, until `deadline`.
    fn reconnect(&self, deadline: Instant, why: &str) -> Result<Conn> {
        let mut delay = Duration::from_millis(50);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let e = match self.open(Some(left.min(Duration::from_secs(10)))) {
                Ok(c) => return Ok(c),
                Err(e) => e,
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if !transient(&e) || left.is_zero() {
                let reason = plain_reason(&e, &self.config);
                return Err(Error::Connect {
                    target: self.target.clone(),
                    reason: if why.is_empty() {
                        reason
                    } else {
                        format!(
                            "{reason} (the connection was lost: {why}; retried for {:?})",
                            self.reconnect_for
                        )
                    },
                });
            }
            std::thread::sleep(delay.min(left));
            delay = (delay * 2).min(Duration::from_secs(2));
        }
    }

    /// A database error that is not a lost connection, in plain words.
    pub(super) fn pg_error(&self, e: &postgres::Error) -> Error {
        match e.as_db_error() {
            Some(db) => {
                let mut m = format!("{} (SQLSTATE {})", db.message(), db.code().code());
                if let Some(d) = db.detail() {
                    m.push_str(": ");
                    m.push_str(d);
                }
                Error::Postgres(m)
            }
            None => Error::Postgres(chain(e)),
        }
    }

    /// Opens the listening connection (with backoff, for up to
    /// `reconnect_for`) and says whether claimable work is there already,
    /// which may have been announced before it listened.
    pub(super) fn listen(&self) -> Result<(Client, bool)> {
        let deadline = Instant::now() + self.reconnect_for;
        let mut why = String::new();
        loop {
            let mut conn = self.reconnect(deadline, &why)?;
            let attempt = (|| -> Result<bool, postgres::Error> {
                conn.client.batch_execute(&format!("LISTEN {CHANNEL}"))?;
                Ok(conn.client.query_one(WORK_THERE, &[&now_millis()])?.get(0))
            })();
            match attempt {
                Ok(work) => return Ok((conn.client, work)),
                Err(e) if connection_lost(&e) && Instant::now() < deadline => {
                    why = plain_reason(&e, &self.config);
                }
                Err(e) => return Err(self.pg_error(&e)),
            }
        }
    }
}

/// `host:port` and `host:port/db` of a configuration.
pub(super) fn places(config: &Config) -> (String, String) {
    let mut hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            Host::Tcp(name) if name.contains(':') => format!("[{name}]"),
            Host::Tcp(name) => name.clone(),
            Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    if hosts.is_empty() {
        hosts = config
            .get_hostaddrs()
            .iter()
            .map(|a| match a {
                std::net::IpAddr::V6(v6) => format!("[{v6}]"),
                std::net::IpAddr::V4(v4) => v4.to_string(),
            })
            .collect();
    }
    let ports = config.get_ports();
    let target = if hosts.is_empty() {
        "(no host)".to_string()
    } else {
        hosts
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
                format!("{h}:{port}")
            })
            .collect::<Vec<_>>()
            .join(",")
    };
    // Like libpq, the database defaults to the user's name.
    let db = config
        .get_dbname()
        .or(config.get_user())
        .unwrap_or("postgres");
    let place = format!("{target}/{db}");
    (target, place)
}

/// The URL without its password, for messages.
pub(super) fn redact(url: &str) -> String {
    let drop_password = |part: &str, sep: char| -> String {
        part.split(sep)
            .filter(|kv| !kv.trim_start().starts_with("password="))
            .collect::<Vec<_>>()
            .join(&sep.to_string())
    };
    let Some(scheme_end) = url.find("://") else {
        // key=value form.
        return drop_password(url, ' ');
    };
    let (scheme, rest) = url.split_at(scheme_end + 3);
    let (rest, query) = match rest.split_once('?') {
        Some((r, q)) => (r, Some(q)),
        None => (rest, None),
    };
    let auth_end = rest.find('/').unwrap_or(rest.len());
    let rest = match rest[..auth_end].rfind('@') {
        Some(at) => {
            let user = rest[..at].split(':').next().unwrap_or("");
            format!("{user}@{}", &rest[at + 1..])
        }
        None => rest.to_string(),
    };
    match query {
        Some(q) => format!("{scheme}{rest}?{}", drop_password(q, '&')),
        None => format!("{scheme}{rest}"),
    }
}

fn code_is(e: &postgres::Error, codes: &[&str]) -> bool {
    e.code().is_some_and(|c| codes.contains(&c.code()))
}

/// Whether `e` means the connection is gone (so reconnecting may help).
pub(super) fn connection_lost(e: &postgres::Error) -> bool {
    if e.is_closed() || io_error(e).is_some() {
        return true;
    }
    e.code().is_some_and(|c| {
        c.code().starts_with("08") || matches!(c.code(), "57P01" | "57P02" | "57P03")
    })
}

/// Whether a failed connection attempt is worth repeating: the server is
/// unreachable, starting, shutting down or full; not a wrong password or
/// database.
fn transient(e: &postgres::Error) -> bool {
    match e.as_db_error() {
        None => true,
        Some(db) => {
            let c = db.code().code();
            c.starts_with("08") || c.starts_with("57P") || c == "53300"
        }
    }
}

fn io_error(e: &postgres::Error) -> Option<&std::io::Error> {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return Some(io);
        }
        source = s.source();
    }
    None
}

/// An error with its causes, `: `-separated.
fn chain(e: &postgres::Error) -> String {
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(c) = source {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        source = c.source();
    }
    s
}

/// Why a connection failed or was lost, in plain words.
fn plain_reason(e: &postgres::Error, config: &Config) -> String {
    if let Some(db) = e.as_db_error() {
        return db.message().to_string();
    }
    if let Some(io) = io_error(e) {
        use std::io::ErrorKind::*;
        return match io.kind() {
            ConnectionRefused => "connection refused".to_string(),
            TimedOut => "timed out".to_string(),
            NotFound => format!("no server socket there ({io})"),
            ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof => {
                "the server closed the connection".to_string()
            }
            _ if io.to_string().contains("lookup address") => {
                let hosts: Vec<String> = config
                    .get_hosts()
                    .iter()
                    .filter_map(|h| match h {
                        Host::Tcp(n) => Some(n.clone()),
                        Host::Unix(_) => None,
                    })
                    .collect();
                format!("could not resolve host {}", hosts.join(","))
            }
            _ => io.to_string(),
        };
    }
    if e.is_closed() {
        return "the server closed the connection".to_string();
    }
    let m = chain(e);
    if m.contains("timeout") {
        return "timed out".to_string();
    }
    m
}

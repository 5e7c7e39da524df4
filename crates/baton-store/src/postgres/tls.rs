//! TLS to PostgreSQL, through rustls, with libpq's `sslmode` meanings:
//! `disable`; `allow` and `prefer` (TLS when the server offers it);
//! `require` (always TLS, the certificate not checked, as libpq does
//! without a root certificate); `verify-ca` (the chain checked against
//! the root certificates); `verify-full` (the chain and the host name).
//! Root certificates come from `sslrootcert` (a PEM file), else
//! `~/.postgresql/root.crt` when it exists, else the Mozilla roots
//! (`webpki-roots`), which is what a managed PostgreSQL's public CA needs.
//!
//! The `postgres` crate itself knows only `disable`, `prefer` and
//! `require`, so baton takes `sslmode` and `sslrootcert` off the URL
//! before handing it over ([`split`]).

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ClientConfig, WebPkiServerVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::path::PathBuf;
use std::sync::Arc;
use tokio_postgres_rustls::MakeRustlsConnect;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// What the URL asked of TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tls {
    pub mode: Mode,
    pub root_cert: Option<PathBuf>,
}

/// Takes `sslmode` and `sslrootcert` off `url` (a `postgres://` URL or a
/// `key=value` connection string): the URL the `postgres` crate can read,
/// and the TLS settings. `Err` says what was wrong.
pub fn split(url: &str) -> Result<(String, Tls), String> {
    let mut mode = None;
    let mut root = None;
    let mut take = |k: &str, v: &str| -> Result<bool, String> {
        match k {
            "sslmode" => {
                mode = Some(match v {
                    "disable" => Mode::Disable,
                    "allow" | "prefer" => Mode::Prefer,
                    "require" => Mode::Require,
                    "verify-ca" => Mode::VerifyCa,
                    "verify-full" => Mode::VerifyFull,
                    other => {
                        return Err(format!(
                            "sslmode={other} is not one of disable, allow, prefer, require, verify-ca, verify-full"
                        ));
                    }
                });
                Ok(true)
            }
            "sslrootcert" => {
                root = Some(PathBuf::from(v));
                Ok(true)
            }
            _ => Ok(false),
        }
    };
    let rest = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        match url.split_once('?') {
            None => url.to_string(),
            Some((base, query)) => {
                let mut kept = form_urlencoded::Serializer::new(String::new());
                for (k, v) in form_urlencoded::parse(query.as_bytes()) {
                    if !take(&k, &v)? {
                        kept.append_pair(&k, &v);
                    }
                }
                let kept = kept.finish();
                if kept.is_empty() {
                    base.to_string()
                } else {
                    format!("{base}?{kept}")
                }
            }
        }
    } else {
        let mut kept = Vec::new();
        for word in url.split_whitespace() {
            match word.split_once('=') {
                Some((k, v)) if take(k, v.trim_matches('\''))? => {}
                _ => kept.push(word),
            }
        }
        kept.join(" ")
    };
    Ok((
        rest,
        Tls {
            // libpq's default: TLS when the server offers it.
            mode: mode.unwrap_or(Mode::Prefer),
            root_cert: root,
        },
    ))
}

impl Tls {
    /// What the `postgres` crate is told.
    pub fn ssl_mode(&self) -> postgres::config::SslMode {
        match self.mode {
            Mode::Disable => postgres::config::SslMode::Disable,
            Mode::Prefer => postgres::config::SslMode::Prefer,
            Mode::Require | Mode::VerifyCa | Mode::VerifyFull => postgres::config::SslMode::Require,
        }
    }

    /// The connector every connection uses.
    pub fn connector(&self) -> Result<MakeRustlsConnect, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?;
        let config = match self.mode {
            Mode::Disable | Mode::Prefer | Mode::Require => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Unchecked(provider)))
                .with_no_client_auth(),
            Mode::VerifyCa | Mode::VerifyFull => {
                let roots = Arc::new(self.roots()?);
                let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider)
                    .build()
                    .map_err(|e| e.to_string())?;
                if self.mode == Mode::VerifyFull {
                    builder.with_webpki_verifier(webpki).with_no_client_auth()
                } else {
                    builder
                        .dangerous()
                        .with_custom_certificate_verifier(Arc::new(ChainOnly(webpki)))
                        .with_no_client_auth()
                }
            }
        };
        Ok(MakeRustlsConnect::new(config))
    }

    fn roots(&self) -> Result<RootCertStore, String> {
        let mut roots = RootCertStore::empty();
        let file = self.root_cert.clone().or_else(|| {
            let home = std::env::var_os("HOME")?;
            let f = PathBuf::from(home).join(".postgresql/root.crt");
            f.is_file().then_some(f)
        });
        match file {
            Some(f) => {
                let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&f)
                    .map_err(|e| format!("cannot read sslrootcert {}: {e}", f.display()))?
                    .collect::<Result<_, _>>()
                    .map_err(|e| {
                        format!("sslrootcert {} is not PEM certificates: {e}", f.display())
                    })?;
                if certs.is_empty() {
                    return Err(format!("sslrootcert {} holds no certificate", f.display()));
                }
                for c in certs {
                    roots
                        .add(c)
                        .map_err(|e| format!("sslrootcert {}: {e}", f.display()))?;
                }
            }
            None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        }
        Ok(roots)
    }
}

/// `require`: any certificate (libpq's `require` checks none either), but
/// the handshake's signatures are still verified.
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca`: the chain must lead to a root; the host name is not checked.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName))
            | Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sslmode_and_sslrootcert_are_taken_off_the_url() {
        let (rest, tls) =
            split("postgres://u@db:5432/app?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&application_name=x")
                .unwrap();
        assert_eq!(rest, "postgres://u@db:5432/app?application_name=x");
        assert_eq!(
            tls,
            Tls {
                mode: Mode::VerifyFull,
                root_cert: Some("/etc/ca.pem".into())
            }
        );
        let (rest, tls) = split("postgres://u@db/app").unwrap();
        assert_eq!(
            (rest.as_str(), tls.mode),
            ("postgres://u@db/app", Mode::Prefer)
        );
        let (rest, tls) = split("postgres://u@db/app?sslmode=require").unwrap();
        assert_eq!(
            (rest.as_str(), tls.mode),
            ("postgres://u@db/app", Mode::Require)
        );
        let (rest, tls) = split("host=db user=u sslmode=verify-ca sslrootcert=/ca.pem").unwrap();
        assert_eq!(rest, "host=db user=u");
        assert_eq!(tls.mode, Mode::VerifyCa);
        let e = split("postgres://db/app?sslmode=maybe").unwrap_err();
        assert!(e.contains("sslmode=maybe is not one of"), "{e}");
    }
}

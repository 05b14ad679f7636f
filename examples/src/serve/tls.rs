//! HTTPS with rustls, from vLLM's flags: `--ssl-certfile` (enables TLS),
//! `--ssl-keyfile` (default: the key in the certificate file, a combined PEM),
//! `--ssl-ca-certs` and `--ssl-cert-reqs` (client certificates: 0 none, 1 optional,
//! 2 required, as Python's `ssl.CERT_*`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use rustls::RootCertStore;
use rustls::server::WebPkiClientVerifier;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

/// The TLS flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// `--ssl-certfile`: the server's certificate chain (PEM).
    pub certfile: PathBuf,
    /// `--ssl-keyfile`: its private key (PEM); `None` reads it from `certfile`.
    pub keyfile: Option<PathBuf>,
    /// `--ssl-ca-certs`: the CAs client certificates must chain to.
    pub ca_certs: Option<PathBuf>,
    /// `--ssl-cert-reqs`: 0 no client certificate, 1 optional, 2 required.
    pub cert_reqs: u8,
}

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .with_context(|| format!("reading certificates from {}", path.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("{} is not a PEM certificate file", path.display()))?;
    if certs.is_empty() {
        bail!("{} holds no PEM certificate", path.display());
    }
    Ok(certs)
}

impl TlsSettings {
    /// The acceptor for these settings; errors name the file or flag at fault.
    pub fn acceptor(&self) -> Result<TlsAcceptor> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let chain = certificates(&self.certfile)?;
        let key_path = self.keyfile.as_deref().unwrap_or(&self.certfile);
        let key = PrivateKeyDer::from_pem_file(key_path).with_context(|| {
            format!(
                "no private key in {} (give it with --ssl-keyfile)",
                key_path.display()
            )
        })?;
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .context("TLS protocol versions")?;
        let builder = match (self.cert_reqs, &self.ca_certs) {
            (0, _) => builder.with_no_client_auth(),
            (1 | 2, Some(ca)) => {
                let mut roots = RootCertStore::empty();
                for cert in certificates(ca)? {
                    roots
                        .add(cert)
                        .with_context(|| format!("a CA certificate in {}", ca.display()))?;
                }
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
                let verifier = if self.cert_reqs == 1 {
                    verifier.allow_unauthenticated().build()
                } else {
                    verifier.build()
                }
                .context("the client certificate verifier")?;
                builder.with_client_cert_verifier(verifier)
            }
            (1 | 2, None) => bail!("--ssl-cert-reqs {} needs --ssl-ca-certs", self.cert_reqs),
            (other, _) => bail!("--ssl-cert-reqs must be 0, 1 or 2, not {other}"),
        };
        let mut config = builder
            .with_single_cert(chain, key)
            .context("the certificate and the key do not match")?;
        // HTTP/1.1 only, as the server speaks.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(TlsAcceptor::from(Arc::new(config)))
    }
}

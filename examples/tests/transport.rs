//! `serve` on a Unix socket (`--uds`) and over TLS (`--ssl-*`, with client
//! certificates): certificates made by the test (rcgen), a rustls client.

mod common;

use std::sync::Arc;

use common::*;
use http_body_util::BodyExt;
use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, KeyPair};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use vllm_examples::serve::ServeConfig;
use vllm_examples::serve::tls::TlsSettings;

/// `GET /version` over an established byte stream.
async fn version<S>(stream: S) -> (hyper::StatusCode, String)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("HTTP handshake");
    tokio::spawn(connection);
    let request = hyper::Request::builder()
        .uri("/version")
        .header("host", "localhost")
        .body(String::new())
        .unwrap();
    let response = sender.send_request(request).await.expect("response");
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[test]
fn a_unix_socket_serves_and_is_removed_at_the_end() {
    let dir = std::env::temp_dir().join(format!("serve-uds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("serve.sock");
    let server = start(ServeConfig {
        uds: Some(path.clone()),
        ..config(PLAIN_TEXT)
    });
    run(async {
        let stream = tokio::net::UnixStream::connect(&path)
            .await
            .expect("connect");
        let (status, body) = version(stream).await;
        assert_eq!(status, hyper::StatusCode::OK);
        assert!(body.contains("\"version\":\"0.33.0\""), "{body}");
    });
    run(server.stop());
    assert!(!path.exists(), "the socket file is removed");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A CA, a server certificate for `localhost` and a client certificate, as PEM files.
struct Pki {
    dir: std::path::PathBuf,
}

impl Pki {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("serve-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let server_key = KeyPair::generate().unwrap();
        let server = CertificateParams::new(vec!["localhost".to_owned()])
            .unwrap()
            .signed_by(&server_key, &ca, &ca_key)
            .unwrap();
        let client_key = KeyPair::generate().unwrap();
        let mut client_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        client_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let client = client_params.signed_by(&client_key, &ca, &ca_key).unwrap();
        let write = |name: &str, text: String| std::fs::write(dir.join(name), text).unwrap();
        write("ca.pem", ca.pem());
        // The server's key in the certificate file: a combined PEM, no --ssl-keyfile.
        write(
            "server.pem",
            format!("{}{}", server.pem(), server_key.serialize_pem()),
        );
        write("client.pem", client.pem());
        write("client.key", client_key.serialize_pem());
        Self { dir }
    }

    fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.join(name)
    }

    fn client(&self, with_certificate: bool) -> tokio_rustls::TlsConnector {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_file_iter(self.path("ca.pem")).unwrap() {
            roots.add(cert.unwrap()).unwrap();
        }
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots);
        let config = if with_certificate {
            let chain = CertificateDer::pem_file_iter(self.path("client.pem"))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            let key = PrivateKeyDer::from_pem_file(self.path("client.key")).unwrap();
            builder.with_client_auth_cert(chain, key).unwrap()
        } else {
            builder.with_no_client_auth()
        };
        tokio_rustls::TlsConnector::from(Arc::new(config))
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn tls_with_required_client_certificates() {
    let pki = Pki::new();
    let server = start(ServeConfig {
        tls: Some(TlsSettings {
            certfile: pki.path("server.pem"),
            keyfile: None,
            ca_certs: Some(pki.path("ca.pem")),
            cert_reqs: 2,
        }),
        ..config(PLAIN_TEXT)
    });
    let addr = server.addr;
    run(async {
        let name = ServerName::try_from("localhost").unwrap();
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let tls = pki
            .client(true)
            .connect(name.clone(), tcp)
            .await
            .expect("TLS");
        let (status, body) = version(tls).await;
        assert_eq!(status, hyper::StatusCode::OK);
        assert!(body.contains("0.33.0"), "{body}");

        // Without a client certificate the server ends the handshake (TLS 1.3 reports
        // it at the first read).
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let refused = match pki.client(false).connect(name, tcp).await {
            Err(_) => true,
            Ok(tls) => {
                let (mut sender, connection) =
                    hyper::client::conn::http1::handshake(TokioIo::new(tls))
                        .await
                        .unwrap();
                tokio::spawn(connection);
                let request = hyper::Request::builder()
                    .uri("/version")
                    .header("host", "localhost")
                    .body(String::new())
                    .unwrap();
                sender.send_request(request).await.is_err()
            }
        };
        assert!(refused, "a client without a certificate was served");
    });
    drop(server);
}

#[test]
fn tls_settings_name_what_is_missing() {
    let pki = Pki::new();
    let needs_ca = TlsSettings {
        certfile: pki.path("server.pem"),
        keyfile: None,
        ca_certs: None,
        cert_reqs: 2,
    };
    let error = needs_ca.acceptor().err().expect("refused").to_string();
    assert_eq!(error, "--ssl-cert-reqs 2 needs --ssl-ca-certs");
    let no_key = TlsSettings {
        certfile: pki.path("ca.pem"),
        keyfile: None,
        ca_certs: None,
        cert_reqs: 0,
    };
    let error = format!("{:#}", no_key.acceptor().err().expect("refused"));
    assert!(error.contains("no private key in"), "{error}");
    assert!(error.contains("--ssl-keyfile"), "{error}");
}

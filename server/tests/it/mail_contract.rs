//! The `Mailer` port's contract, run against both adapters: the outbox
//! (`.eml` files) and SMTP (to the tests' server). A message arrives to
//! its address with its subject, a plain-text and an HTML part; an address
//! mail cannot go to is a 400 naming `email`.

use std::sync::Arc;

use app::ports::{Mail, Mailer};
use server::mail::{sender, Outbox, Smtp};

use crate::common::smtp::{Received, SmtpServer};

fn mail(to: &str) -> Mail {
    Mail {
        to: to.to_owned(),
        subject: "Über the contract".to_owned(),
        text: "Plain words with a link: http://console.test/reset?token=abc\n".to_owned(),
        html: "<p>HTML words with <a href=\"http://console.test/x\">a link</a></p>".to_owned(),
        link: Some("http://console.test/reset?token=abc".to_owned()),
    }
}

async fn contract(mailer: Arc<dyn Mailer>, delivered: impl AsyncFn() -> Vec<Received>) {
    mailer.send(mail("ann@example.com")).await.unwrap();
    let got = delivered().await;
    assert_eq!(got.len(), 1);
    let text = got[0].readable();
    assert!(text.contains("To: ann@example.com"), "{text}");
    assert!(
        text.contains("From: PaddleCloud <paddlecloud@localhost>"),
        "{text}"
    );
    assert!(text.contains("Content-Type: text/plain"), "{text}");
    assert!(text.contains("Plain words with a link"), "{text}");
    assert!(text.contains("Content-Type: text/html"), "{text}");
    assert!(
        text.contains("<a href=\"http://console.test/x\">a link</a>"),
        "{text}"
    );
    // The subject is encoded for mail, and reads back as written.
    assert!(got[0].header("Subject").is_some());

    let bad = mailer.send(mail("not an address")).await.unwrap_err();
    assert_eq!(bad.status(), 400);
    assert_eq!(bad.field(), Some("email"));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_outbox_writes_each_message_as_an_eml_file() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("outbox");
    let from = sender(server::mail::DEFAULT_FROM).unwrap();
    let outbox: Arc<dyn Mailer> = Arc::new(Outbox::new(folder.clone(), from).unwrap());
    contract(outbox, async || {
        std::fs::read_dir(&folder)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "eml"))
            .map(|p| Received {
                to: vec!["ann@example.com".to_owned()],
                raw: std::fs::read_to_string(p).unwrap(),
            })
            .collect()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn smtp_hands_each_message_to_the_server() {
    let server = SmtpServer::start().await;
    let from = sender(server::mail::DEFAULT_FROM).unwrap();
    let smtp: Arc<dyn Mailer> = Arc::new(Smtp::new(&server.url, from).unwrap());
    contract(smtp, async || server.wait_for("ann@example.com", 1).await).await;
}

//! The quick start of README.md: create a sandbox session, find it in the list, pay it on the
//! sandbox's simulated chain, and receive and verify its webhooks.
//!
//!     SVC_API_KEY=svc_test_... SVC_WEBHOOK_SECRET=whsec_... cargo run --offline --example quickstart   # against `npm start` on 127.0.0.1:8080
//!
//! The gateway's test/clients/e2e.rust.test.ts runs it against a real daemon. The receiver is a
//! few lines of std::net to keep the example free of a web framework; with one, pass its raw body
//! bytes and its header pairs to `verify_webhook` the same way.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use svc_gateway::webhooks::{verify_webhook, VerifyOptions};
use svc_gateway::{Chain, Client, Currency, PaymentListParams, SandboxOutcome, SandboxPayParams, SessionCreateParams, WebhookEventType};

fn main() {
    if let Err(error) = run() {
        println!("✗ {}", error);
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut builder = Client::builder(std::env::var("SVC_API_KEY")?);
    if let Ok(base_url) = std::env::var("SVC_BASE_URL") {
        builder = builder.base_url(base_url);
    }
    let gateway = builder.build();

    // The sandbox webhook secret the first `npm start` printed. Not rotated here: every receiver
    // already holding it would stop verifying. Lost it? `svc webhooks rotate-secret --merchant mer_... --mode test`.
    let secret = std::env::var("SVC_WEBHOOK_SECRET").map_err(|_| "set SVC_WEBHOOK_SECRET to the webhook secret the first `npm start` printed (whsec_...)")?;

    let listener = TcpListener::bind("127.0.0.1:0")?;
    let webhook_url = format!("http://{}/webhooks", listener.local_addr()?);
    let (confirmed, on_confirmed) = mpsc::channel();
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (secret, confirmed) = (secret.clone(), confirmed.clone());
            thread::spawn(move || receive(stream, &secret, &confirmed));
        }
    });

    let session =
        gateway.sessions().create(&SessionCreateParams::new().amount("25.00").currency(Currency::Usdc).chain(Chain::Base).webhook_url(webhook_url))?;
    println!(
        "created {}: pay {} {} on {} to {}",
        session.id,
        session.amount_due.unwrap_or_default(),
        session.currency.map(|c| c.to_string()).unwrap_or_default(),
        session.chain.map(|c| c.to_string()).unwrap_or_default(),
        session.payment_address.unwrap_or_default()
    );

    for payment in gateway.payments().list_all(&PaymentListParams::new().limit(10)) {
        let payment = payment?;
        if payment.id == session.id {
            println!("listed {} status={}", payment.id, payment.status);
        }
    }

    let paid = gateway.sandbox().pay(&session.id, &SandboxPayParams::new().outcome(SandboxOutcome::Exact))?;
    println!("paid {} in the sandbox, tx {}", paid.amount, paid.tx_hash.unwrap_or_default());

    on_confirmed.recv_timeout(Duration::from_secs(30)).map_err(|_| "no payment.confirmed webhook within 30 s")?;
    Ok(())
}

/// One delivery: read the request, verify its raw body, answer 200 or 400.
fn receive(mut stream: TcpStream, secret: &str, confirmed: &mpsc::Sender<()>) {
    let (headers, raw_body) = match read_request(&stream) {
        Ok(request) => request,
        Err(_) => return,
    };
    let status = match verify_webhook(&raw_body, &headers, secret, &VerifyOptions { livemode: Some(false), ..VerifyOptions::default() }) {
        Err(refused) => {
            println!("✗ refused: {}", refused.reason);
            "400 Bad Request"
        }
        Ok(event) => {
            if let Ok(data) = event.payment_data() {
                println!("✓ {} {} {} status={} signature verified", event.event, event.id, data.id, data.status);
            }
            if event.event == WebhookEventType::PaymentConfirmed {
                let _ = confirmed.send(());
            }
            "200 OK"
        }
    };
    let _ = stream.write_all(format!("HTTP/1.1 {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", status).as_bytes());
}

/// The header pairs and the raw body of one HTTP/1.1 request.
fn read_request(stream: &TcpStream) -> std::io::Result<(Vec<(String, String)>, Vec<u8>)> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line)?; // POST /webhooks HTTP/1.1
    let mut headers = Vec::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_string(), value.trim().to_string()));
        }
    }
    let length = headers.iter().find(|(name, _)| name.eq_ignore_ascii_case("content-length")).and_then(|(_, value)| value.parse().ok()).unwrap_or(0);
    let mut raw_body = vec![0; length];
    reader.read_exact(&mut raw_body)?;
    Ok((headers, raw_body))
}

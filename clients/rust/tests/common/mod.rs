//! A real HTTP server on loopback that answers each request as a script says (by request index),
//! for the client tests that need answers a healthy gateway does not give on demand: 503s, 429s,
//! dropped connections. Every request is recorded.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub url: String,
    /// Names in lower case.
    pub headers: HashMap<String, String>,
    pub body: String,
}

pub enum Answer {
    Json(u16, Vec<(&'static str, String)>, Option<serde_json::Value>),
    /// Drop the connection without answering.
    Reset,
    /// Never answer (the client times out).
    Hang,
}

pub fn json(status: u16, body: serde_json::Value) -> Answer {
    Answer::Json(status, Vec::new(), Some(body))
}

pub struct Scripted {
    pub url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<AtomicBool>,
    address: String,
}

impl Scripted {
    pub fn start(script: impl Fn(&Seen, usize) -> Answer + Send + Sync + 'static) -> Scripted {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let script = Arc::new(script);
        let (seen_in, stop_in) = (seen.clone(), stop.clone());
        thread::spawn(move || {
            for stream in listener.incoming() {
                if stop_in.load(Ordering::SeqCst) {
                    break;
                }
                let (seen, script) = (seen_in.clone(), script.clone());
                if let Ok(stream) = stream {
                    thread::spawn(move || serve(stream, &seen, &*script));
                }
            }
        });
        Scripted { url: format!("http://{}/api/v1", address), seen, stop, address }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Scripted {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(&self.address); // wakes the accept loop
    }
}

fn serve(stream: TcpStream, seen: &Mutex<Vec<Seen>>, script: &(dyn Fn(&Seen, usize) -> Answer + Send + Sync)) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let (method, url) = (parts.next().unwrap_or("").to_string(), parts.next().unwrap_or("").to_string());
        let mut headers = HashMap::new();
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
            }
        }
        let length: usize = headers.get("content-length").and_then(|value| value.parse().ok()).unwrap_or(0);
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let request = Seen { method, url, headers, body: String::from_utf8(body).unwrap() };
        let index = {
            let mut seen = seen.lock().unwrap();
            seen.push(request.clone());
            seen.len() - 1
        };
        match script(&request, index) {
            Answer::Reset => return,
            Answer::Hang => {
                thread::sleep(Duration::from_secs(2));
                return;
            }
            Answer::Json(status, extra, json) => {
                let payload = json.map(|json| json.to_string()).unwrap_or_default();
                let mut head = format!("HTTP/1.1 {} Scripted\r\nContent-Length: {}\r\n", status, payload.len());
                if !payload.is_empty() {
                    head.push_str("Content-Type: application/json; charset=utf-8\r\n");
                }
                for (name, value) in extra {
                    head.push_str(&format!("{}: {}\r\n", name, value));
                }
                head.push_str("\r\n");
                let mut stream = reader.get_ref();
                if stream.write_all(head.as_bytes()).and_then(|_| stream.write_all(payload.as_bytes())).is_err() {
                    return;
                }
            }
        }
    }
}

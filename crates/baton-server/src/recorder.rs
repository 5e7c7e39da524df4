//! Group commit of deliveries: request handlers hand their delivery to one
//! writer thread and wait; the writer takes every delivery that arrived
//! while it was busy and stores them in one transaction (one fsync), then
//! answers each. A delivery is answered only once it is durable.

use baton_engine::DeliveryWriter;
use baton_store::NewDelivery;
use std::sync::mpsc;
use tokio::sync::oneshot;

/// The most deliveries one transaction takes.
const MAX_BATCH: usize = 256;

type Answer = oneshot::Sender<Result<bool, String>>;

/// The handle request handlers use.
#[derive(Clone)]
pub struct Recorder {
    tx: mpsc::Sender<(NewDelivery, Answer)>,
}

impl Recorder {
    /// Starts the writer thread on `writer`; it ends when every handle is
    /// dropped.
    pub fn start(writer: DeliveryWriter) -> Recorder {
        let (tx, rx) = mpsc::channel::<(NewDelivery, Answer)>();
        std::thread::Builder::new()
            .name("baton-deliveries".into())
            .spawn(move || write_loop(&writer, &rx))
            .expect("a thread starts");
        Recorder { tx }
    }

    /// Stores `d`; `Ok(true)` if it is new, `Ok(false)` for a redelivery.
    pub async fn record(&self, d: NewDelivery) -> Result<bool, String> {
        let (answer, wait) = oneshot::channel();
        self.tx
            .send((d, answer))
            .map_err(|_| "the delivery writer stopped".to_string())?;
        wait.await
            .map_err(|_| "the delivery writer stopped".to_string())?
    }
}

fn write_loop(writer: &DeliveryWriter, rx: &mpsc::Receiver<(NewDelivery, Answer)>) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        let (deliveries, answers): (Vec<NewDelivery>, Vec<Answer>) = batch.into_iter().unzip();
        match writer.record(&deliveries) {
            Ok(fresh) => {
                for (answer, new) in answers.into_iter().zip(fresh) {
                    let _ = answer.send(Ok(new));
                }
            }
            Err(e) => {
                let said = e.message.clone();
                for answer in answers {
                    let _ = answer.send(Err(said.clone()));
                }
            }
        }
    }
}

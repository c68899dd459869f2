//! Dropping an engine off the JavaScript thread. The host's garbage collector
//! finalizes an `LcmEngine` on the JavaScript thread, and whatever the engine still
//! holds is freed there: the recall catalogs of an engine never closed (≈ 100 MiB
//! per million messages; milliseconds of the event loop to free), its read
//! connections and their caches. An engine is handed to a short-lived
//! thread of its own to be dropped instead.

use std::ops::Deref;

/// A value dropped on a thread of its own ([`drop_off_thread`]) when this drops.
pub struct DropsOffThread<T: Send + 'static>(Option<T>);

impl<T: Send + 'static> DropsOffThread<T> {
    /// Wraps `value`.
    pub fn new(value: T) -> Self {
        DropsOffThread(Some(value))
    }
}

impl<T: Send + 'static> Deref for DropsOffThread<T> {
    type Target = T;

    fn deref(&self) -> &T {
        match &self.0 {
            Some(v) => v,
            // Taken only by `drop`, after which nothing can deref.
            None => unreachable!("a DropsOffThread is emptied only when it drops"),
        }
    }
}

impl<T: Send + 'static> Drop for DropsOffThread<T> {
    fn drop(&mut self) {
        if let Some(v) = self.0.take() {
            drop_off_thread(v);
        }
    }
}

/// Drops `value` on a new thread (`lcm-drop`); where no thread can be started,
/// here (the failed spawn drops what it was given).
fn drop_off_thread<T: Send + 'static>(value: T) {
    let _detached = std::thread::Builder::new()
        .name("lcm-drop".into())
        .spawn(move || drop(value));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::thread::ThreadId;

    /// Reports the thread it is dropped on.
    struct Witness(mpsc::Sender<(ThreadId, Option<String>)>);

    impl Drop for Witness {
        fn drop(&mut self) {
            let t = std::thread::current();
            let _ = self.0.send((t.id(), t.name().map(str::to_owned)));
        }
    }

    #[test]
    fn the_value_is_dropped_on_another_thread_once() {
        let (tx, rx) = mpsc::channel();
        let wrapped = DropsOffThread::new(Witness(tx));
        // Deref reaches the value while it lives.
        let witness: &Witness = &wrapped;
        assert!(witness.0.send((std::thread::current().id(), None)).is_ok());
        assert_eq!(rx.recv().unwrap().0, std::thread::current().id());
        drop(wrapped);
        let (id, name) = rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
        assert_ne!(id, std::thread::current().id());
        assert_eq!(name.as_deref(), Some("lcm-drop"));
        // Dropped once: the sender went with it, nothing else arrives.
        assert!(rx.recv_timeout(std::time::Duration::from_secs(10)).is_err());
    }
}

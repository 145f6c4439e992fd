//! A cancellation signal shared between a turn and the work it started.
#![deny(clippy::print_stdout, clippy::print_stderr)]

use std::sync::Arc;

use tokio::sync::watch;

/// Cloneable; cancelling any clone cancels all of them, once and for good.
#[derive(Debug, Clone)]
pub struct Cancel {
    sender: Arc<watch::Sender<bool>>,
}

impl Default for Cancel {
    fn default() -> Self {
        Self {
            sender: Arc::new(watch::channel(false).0),
        }
    }
}

impl Cancel {
    /// Signals cancellation.
    pub fn cancel(&self) {
        self.sender.send_replace(true);
    }

    /// Whether `other` is a clone of this signal.
    pub fn same_as(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.sender, &other.sender)
    }

    /// Whether cancellation was signalled.
    pub fn is_cancelled(&self) -> bool {
        *self.sender.borrow()
    }

    /// Completes once cancellation is signalled.
    pub async fn cancelled(&self) {
        let mut receiver = self.sender.subscribe();
        // The sender lives in `self`, so `wait_for` cannot fail.
        let _ = receiver.wait_for(|cancelled| *cancelled).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn cancelling_a_clone_wakes_waiters() {
        let cancel = Cancel::default();
        let clone = cancel.clone();
        let waiter = tokio::spawn(async move { clone.cancelled().await });
        assert!(!cancel.is_cancelled());
        cancel.cancel();
        waiter.await.unwrap();
        assert!(cancel.is_cancelled());
        // Already cancelled: returns at once.
        cancel.cancelled().await;
    }
}

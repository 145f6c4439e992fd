//! A cancellation signal shared between a turn and the work it started,
//! and the SIGINTs that front ends turn into one.
#![deny(clippy::print_stdout, clippy::print_stderr)]

use std::sync::Arc;

use tokio::sync::watch;

/// Cloneable; cancelling any clone cancels all of them, once and for good.
/// A [`Cancel::child`] is cancelled with its parent, and on its own.
#[derive(Debug, Clone)]
pub struct Cancel {
    sender: Arc<watch::Sender<bool>>,
    parent: Option<Arc<watch::Sender<bool>>>,
}

impl Default for Cancel {
    fn default() -> Self {
        Self {
            sender: Arc::new(watch::channel(false).0),
            parent: None,
        }
    }
}

impl Cancel {
    /// Signals cancellation (of this signal and its clones, not of its
    /// parent).
    pub fn cancel(&self) {
        self.sender.send_replace(true);
    }

    /// A signal cancelled when this one is, and also on its own: for part
    /// of a task that may be stopped alone.
    #[must_use]
    pub fn child(&self) -> Self {
        Self {
            sender: Arc::new(watch::channel(false).0),
            parent: Some(Arc::clone(&self.sender)),
        }
    }

    /// Whether `other` is a clone of this signal.
    pub fn same_as(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.sender, &other.sender)
    }

    /// Whether cancellation was signalled (here or to the parent).
    pub fn is_cancelled(&self) -> bool {
        *self.sender.borrow() || self.parent.as_ref().is_some_and(|p| *p.borrow())
    }

    /// Completes once cancellation is signalled (here or to the parent).
    pub async fn cancelled(&self) {
        let own = wait(&self.sender);
        match &self.parent {
            Some(parent) => {
                tokio::select! {
                    () = own => {}
                    () = wait(parent) => {}
                }
            }
            None => own.await,
        }
    }
}

/// SIGINTs as they come, from one listener kept for as long as this lives:
/// a `tokio::signal::ctrl_c()` made anew on each pass of a loop misses a
/// signal that arrives between two passes.
pub struct Interrupts(Option<tokio::signal::unix::Signal>);

impl Interrupts {
    /// Starts listening.
    pub fn listen() -> Self {
        Self(tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).ok())
    }

    /// The next SIGINT; never, when no listener could be made.
    pub async fn next(&mut self) -> Option<()> {
        match self.0.as_mut() {
            Some(listener) => listener.recv().await,
            None => std::future::pending().await,
        }
    }
}

/// Completes once `sender` says cancelled.
async fn wait(sender: &watch::Sender<bool>) {
    let mut receiver = sender.subscribe();
    // The sender lives as long as the borrow, so `wait_for` cannot fail.
    let _ = receiver.wait_for(|cancelled| *cancelled).await;
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

    #[tokio::test]
    async fn a_child_stops_with_its_parent_and_alone() {
        let parent = Cancel::default();
        let child = parent.child();
        let waiter = tokio::spawn({
            let child = child.clone();
            async move { child.cancelled().await }
        });
        parent.cancel();
        waiter.await.unwrap();
        assert!(child.is_cancelled());
        // Alone: the parent goes on.
        let parent = Cancel::default();
        let child = parent.child();
        child.cancel();
        child.cancelled().await;
        assert!(child.is_cancelled());
        assert!(!parent.is_cancelled());
    }
}

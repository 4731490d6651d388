//! A table of device-side objects addressed by [`BufferId`]: the GPU backends keep their
//! buffers here (with dtype and length); a freed slot is reused by the next allocation.

use crate::buffer::BufferId;
use std::sync::{Mutex, MutexGuard};
use tilewise_core::{Diagnostic, Result};

pub(crate) struct Slots<T> {
    items: Mutex<Vec<Option<T>>>,
    /// What the slots hold, for error messages ("CUDA buffer").
    what: &'static str,
}

/// The locked table.
pub(crate) struct Locked<'a, T> {
    items: MutexGuard<'a, Vec<Option<T>>>,
    what: &'static str,
}

impl<T> Slots<T> {
    pub fn new(what: &'static str) -> Self {
        Slots {
            items: Mutex::new(vec![]),
            what,
        }
    }

    pub fn lock(&self) -> Result<Locked<'_, T>> {
        let items = self.items.lock().map_err(|_| {
            Diagnostic::internal(format!("the {} table's lock is poisoned", self.what))
        })?;
        Ok(Locked {
            items,
            what: self.what,
        })
    }

    /// Stores `item` in the first free slot.
    pub fn insert(&self, item: T) -> Result<BufferId> {
        let mut l = self.lock()?;
        if let Some(i) = l.items.iter().position(Option::is_none) {
            l.items[i] = Some(item);
            Ok(BufferId(i))
        } else {
            l.items.push(Some(item));
            Ok(BufferId(l.items.len() - 1))
        }
    }

    /// Frees slot `id` (dropping the object); unknown ids are ignored.
    pub fn remove(&self, id: BufferId) {
        if let Ok(mut l) = self.items.lock() {
            if let Some(slot) = l.get_mut(id.0) {
                *slot = None;
            }
        }
    }
}

impl<T> Slots<T> {
    /// Empties the table without dropping its objects: their handles belong to a
    /// context that is gone (a CUDA device lost to a fault), and freeing them could
    /// free what a new context was given since.
    pub fn leak_all(&self) {
        let mut l = self.items.lock().unwrap_or_else(|e| e.into_inner());
        for item in l.drain(..) {
            std::mem::forget(item);
        }
    }
}

impl<T> Locked<'_, T> {
    /// The object in slot `id`.
    pub fn get(&self, id: BufferId) -> Result<&T> {
        self.items
            .get(id.0)
            .and_then(Option::as_ref)
            .ok_or_else(|| Diagnostic::internal(format!("{} {} does not exist", self.what, id.0)))
    }
}

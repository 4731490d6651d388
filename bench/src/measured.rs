//! The result rows every case produces and the report reads: [`Measured`], its
//! [`Role`], and the name of the copy case (the bandwidth reference that rows point to
//! and the report takes the memory roof from). Shared by `cases`, `references` and
//! `report`, which therefore need not import each other.

/// The name of the copy case, the bandwidth reference of the bandwidth-bound cases.
pub const COPY_CASE: &str = "copy f32 (reference)";

/// Whether a row is tilewise's or a reference's (copy, cuBLAS).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Tilewise,
    Reference,
}

/// One measured case.
pub struct Measured {
    pub case: String,
    pub device: String,
    pub size: String,
    /// Median seconds per run.
    pub seconds: f64,
    /// Floating-point operations per run (nominal for the bandwidth-bound cases; 0 when
    /// not meaningful).
    pub flops: f64,
    /// Bytes moved per run (the minimum: each input read once, each output written
    /// once, except where the case says otherwise).
    pub bytes: f64,
    /// The largest relative error seen in the check against the float64 reference.
    pub max_rel_err: f64,
    /// What timed it: CUDA events or the host clock.
    pub timer: &'static str,
    pub role: Role,
    /// The case name of this row's reference, on the same device.
    pub reference: Option<String>,
    /// Whether the row is a point of the roofline chart.
    pub roofline: bool,
    /// Further figures (seconds unless named otherwise), in the JSON and the notes column.
    pub notes: Vec<(&'static str, f64)>,
}

impl Measured {
    pub fn flop_rate(&self) -> f64 {
        self.flops / self.seconds
    }
    pub fn byte_rate(&self) -> f64 {
        self.bytes / self.seconds
    }
    /// FLOP per byte.
    pub fn intensity(&self) -> f64 {
        self.flops / self.bytes
    }
}

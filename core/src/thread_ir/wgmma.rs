//! Warpgroup MMA (`wgmma`, Hopper's sm_90a) in the Thread IR: the instruction's shape,
//! its fragment layout and the shared-memory matrix descriptors of its operands, with
//! the hardware's reading of a descriptor ([`SmemMatrix::byte_offset`]) written from
//! the PTX ISA ("Shared Memory Matrix Layout", "Matrix Descriptor Format"), so that the
//! simulator reads what the GPU reads and checks the lowering's layouts against it.

use crate::ir::DType;

/// `wgmma.mma_async.m64nNk16` with f16 or bf16 inputs, or `m64nNk8` with tf32 inputs
/// (`input` f32, the top 19 bits read), and f32 accumulators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WgmmaShape {
    pub input: DType,
    /// `N`: a multiple of 8 from 8 to 256.
    pub n: u32,
}

impl WgmmaShape {
    pub const M: u32 = 64;

    /// `K`: 16 for 16-bit inputs, 8 for tf32.
    pub fn k(self) -> u32 {
        if self.input == DType::F32 {
            8
        } else {
            16
        }
    }

    /// Accumulator registers a thread holds: `n / 2`.
    pub fn regs(self) -> u32 {
        self.n / 2
    }

    /// The (row, column) of accumulator register `i` of thread `t` (0..128) of the
    /// warpgroup: warp `t / 32` owns rows `16 * warp ..`; within it, as `mma.sync`'s
    /// 16x8 accumulator repeated along N (`i / 4` is the 8-column block).
    pub fn acc_coord(self, t: u32, i: u32) -> (u32, u32) {
        let (warp, lane) = (t / 32, t % 32);
        let (g, q) = (lane / 4, lane % 4);
        let row = 16 * warp + g + 8 * ((i >> 1) & 1);
        let col = 8 * (i / 4) + 2 * q + (i & 1);
        (row, col)
    }

    /// Registers a thread holds of an `a` read from registers (tf32: 4).
    pub fn a_regs(self) -> u32 {
        4
    }

    /// The (row, column) of `a` register `i` of thread `t` (0..128) of the warpgroup,
    /// for tf32 inputs: warp `t / 32` owns rows `16 * warp ..`; within it, as
    /// `mma.sync`'s m16n8k8 `a` fragment: `a0 (g, q)`, `a1 (g + 8, q)`, `a2 (g, q + 4)`,
    /// `a3 (g + 8, q + 4)`, with `g = lane / 4`, `q = lane % 4`.
    pub fn a_coord(self, t: u32, i: u32) -> (u32, u32) {
        let (warp, lane) = (t / 32, t % 32);
        let (g, q) = (lane / 4, lane % 4);
        (16 * warp + g + 8 * (i & 1), q + 4 * (i >> 1))
    }

    /// The PTX type suffix of the inputs.
    pub fn input_name(self) -> &'static str {
        match self.input {
            DType::BF16 => "bf16",
            DType::F32 => "tf32",
            _ => "f16",
        }
    }
}

/// The `a` operand of a `wgmma`: a matrix in shared memory, or the warpgroup's
/// registers. Registers hold tf32 inputs only here (`m64nNk8`): four a thread, in
/// [`WgmmaShape::a_coord`]'s layout (PTX's register fragment of `a`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum WgmmaA {
    Shared(SmemMatrix),
    Regs(Vec<super::Reg>),
}

impl WgmmaA {
    /// The shared matrix, where `a` is one.
    pub fn shared(&self) -> Option<&SmemMatrix> {
        match self {
            WgmmaA::Shared(m) => Some(m),
            WgmmaA::Regs(_) => None,
        }
    }
}

/// A `wgmma` operand in shared memory, as its matrix descriptor describes it: the
/// matrix starts `offset` elements after element `base` (a register, uniform in the
/// warpgroup) of shared array `arr`, which is aligned to the swizzle's repeat
/// (`8 * swizzle` bytes), and lies in the canonical layout of its major-ness and
/// swizzle with leading- and stride-dimension byte offsets `lbo` and `sbo`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SmemMatrix {
    pub arr: u32,
    pub base: super::Reg,
    pub offset: u32,
    /// 32, 64 or 128 (bytes), or 0 for none (interleaved core matrices).
    pub swizzle: u32,
    pub lbo: u32,
    pub sbo: u32,
    /// Contiguous along M (for `a`) or N (for `b`), PTX `imm-trans` 1; else K-major.
    pub mn_major: bool,
}

impl SmemMatrix {
    /// The descriptor's swizzle-mode field.
    pub fn swizzle_mode(&self) -> u64 {
        match self.swizzle {
            128 => 1,
            64 => 2,
            32 => 3,
            _ => 0,
        }
    }

    /// The descriptor's bits other than the start address: LBO, SBO and swizzle mode
    /// (base offset 0: the array starts on a repeat of the swizzle pattern).
    pub fn descriptor_fields(&self) -> u64 {
        let enc = |x: u32| ((x as u64) & 0x3FFFF) >> 4;
        (enc(self.lbo) << 16) | (enc(self.sbo) << 32) | (self.swizzle_mode() << 62)
    }

    /// Where the hardware reads element `(mn, k)` of the matrix (`mn` its row of `a` or
    /// column of `b`, `k` along K) for elements of `elem` bytes: the byte offset from
    /// the array's start, given the start address `start` (bytes from the array's
    /// start). The canonical layouts in units of `T = 16 / elem` elements (PTX ISA):
    /// K-major `((8,m),(T,2k)):((1T,SBO),(1,LBO))` without swizzle and
    /// `((8,m),(T,2k)):((sT,SBO),(1,T))` with an `s * 16`-byte swizzle; MN-major
    /// `((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))` and `((T,s,m),(8,k)):((1,T,LBO),(sT,SBO))`;
    /// then the swizzle XORs address bits 7.. into bits 4...
    pub fn byte_offset(&self, start: u32, mn: u32, k: u32, elem: u32) -> u32 {
        let t = 16 / elem;
        let s = self.swizzle / 16;
        let off = match (self.mn_major, self.swizzle) {
            (false, 0) => (mn % 8) * 16 + (mn / 8) * self.sbo + (k % t) * elem + (k / t) * self.lbo,
            (false, _) => (mn % 8) * self.swizzle + (mn / 8) * self.sbo + k * elem,
            (true, 0) => (mn % t) * elem + (mn / t) * self.sbo + (k % 8) * 16 + (k / 8) * self.lbo,
            (true, _) => {
                let run = s * t;
                (mn % run) * elem
                    + (mn / run) * self.lbo
                    + (k % 8) * self.swizzle
                    + (k / 8) * self.sbo
            }
        };
        let addr = start + off;
        if s == 0 {
            return addr;
        }
        addr ^ (((addr >> 7) & (s - 1)) << 4)
    }
}

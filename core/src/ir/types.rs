//! Value types of the tile IR.
//!
//! Every SSA value has a [`Type`]:
//! - a **tile** of elements with a static shape (`tile<64x32xf32>`); rank 0 is a scalar
//!   (`f32`). Elements are data ([`Elem::Data`]) or pointers ([`Elem::Ptr`]): a pointer
//!   tile holds one address per element, each rooted at a kernel argument.
//! - a **block pointer** (`block_ptr<f16, 64x32>`): the value `tl.make_block_ptr`
//!   returns, carrying base, shape, strides, offsets and order; `advance` makes a new one.
//!
//! Shapes are static: every dimension is known once a kernel is specialized.

use super::DType;
use std::fmt;

/// The element of a tile: data, or a pointer to data of some type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Elem {
    Data(DType),
    Ptr(DType),
}

impl Elem {
    /// The data type, for data elements.
    pub fn dtype(self) -> Option<DType> {
        match self {
            Elem::Data(d) => Some(d),
            Elem::Ptr(_) => None,
        }
    }

    pub fn is_ptr(self) -> bool {
        matches!(self, Elem::Ptr(_))
    }
}

impl fmt::Display for Elem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Elem::Data(d) => write!(f, "{d}"),
            Elem::Ptr(d) => write!(f, "ptr<{d}>"),
        }
    }
}

/// The static shape of a tile; empty for a scalar.
pub type Shape = Vec<u32>;

/// The type of an SSA value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    Tile { elem: Elem, shape: Shape },
    BlockPtr { pointee: DType, block_shape: Shape },
}

impl Type {
    pub fn scalar(dtype: DType) -> Type {
        Type::Tile {
            elem: Elem::Data(dtype),
            shape: vec![],
        }
    }

    pub fn tile(dtype: DType, shape: impl Into<Shape>) -> Type {
        Type::Tile {
            elem: Elem::Data(dtype),
            shape: shape.into(),
        }
    }

    pub fn ptr(pointee: DType, shape: impl Into<Shape>) -> Type {
        Type::Tile {
            elem: Elem::Ptr(pointee),
            shape: shape.into(),
        }
    }

    /// The element of a tile type; `None` for a block pointer.
    pub fn elem(&self) -> Option<Elem> {
        match self {
            Type::Tile { elem, .. } => Some(*elem),
            Type::BlockPtr { .. } => None,
        }
    }

    /// The data type of a data tile.
    pub fn dtype(&self) -> Option<DType> {
        self.elem().and_then(Elem::dtype)
    }

    /// The shape of a tile, or the block shape of a block pointer.
    pub fn shape(&self) -> &[u32] {
        match self {
            Type::Tile { shape, .. } => shape,
            Type::BlockPtr { block_shape, .. } => block_shape,
        }
    }

    pub fn rank(&self) -> usize {
        self.shape().len()
    }

    /// Number of elements of a tile (1 for a scalar).
    pub fn numel(&self) -> usize {
        self.shape().iter().map(|&d| d as usize).product()
    }

    pub fn is_scalar(&self) -> bool {
        matches!(self, Type::Tile { shape, .. } if shape.is_empty())
    }

    pub fn is_block_ptr(&self) -> bool {
        matches!(self, Type::BlockPtr { .. })
    }

    /// The same kind of tile with another shape.
    pub fn with_shape(&self, shape: impl Into<Shape>) -> Type {
        match self {
            Type::Tile { elem, .. } => Type::Tile {
                elem: *elem,
                shape: shape.into(),
            },
            Type::BlockPtr { pointee, .. } => Type::BlockPtr {
                pointee: *pointee,
                block_shape: shape.into(),
            },
        }
    }

    /// The same shape with another data type.
    pub fn with_dtype(&self, dtype: DType) -> Type {
        Type::Tile {
            elem: Elem::Data(dtype),
            shape: self.shape().to_vec(),
        }
    }
}

/// Writes a shape as `64x32` (empty for a scalar).
pub fn fmt_shape(shape: &[u32]) -> String {
    shape
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join("x")
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Tile { elem, shape } if shape.is_empty() => write!(f, "{elem}"),
            Type::Tile { elem, shape } => write!(f, "tile<{}x{elem}>", fmt_shape(shape)),
            Type::BlockPtr {
                pointee,
                block_shape,
            } => {
                write!(f, "block_ptr<{pointee}, {}>", fmt_shape(block_shape))
            }
        }
    }
}

//! `.npy` files for `tilewise run` (through the `npyz` crate): buffer arguments read
//! from them (any shape, flattened in the file's C order) and buffers written to them
//! after a run. NumPy has no bf16 or fp8 dtypes: such buffers are written as f32 (and
//! read from any float file with an explicit `bf16@FILE.npy`).

use std::path::Path;
use tilewise::half::f16;
use tilewise::DType;

/// A file's element type as tilewise names it, from its NumPy type string.
fn dtype_of(ts: &npyz::TypeStr) -> Option<DType> {
    use npyz::TypeChar::{Bool, Float, Int, Uint};
    Some(match (ts.type_char(), ts.size_field()) {
        (Float, 2) => DType::F16,
        (Float, 4) => DType::F32,
        (Float, 8) => DType::F64,
        (Int, 1) => DType::I8,
        (Int, 2) => DType::I16,
        (Int, 4) => DType::I32,
        (Int, 8) => DType::I64,
        (Uint, 1) => DType::U8,
        (Uint, 2) => DType::U16,
        (Uint, 4) => DType::U32,
        (Uint, 8) => DType::U64,
        (Bool, 1) => DType::I1,
        _ => return None,
    })
}

/// Reads `path`: its element type and its values (as f64, exact for every type but
/// 64-bit integers beyond 2^53).
pub fn read(path: &Path) -> Result<(DType, Vec<f64>), String> {
    let what = |e: std::io::Error| format!("{}: {e}", path.display());
    let file = std::fs::File::open(path).map_err(what)?;
    let npy = npyz::NpyFile::new(std::io::BufReader::new(file)).map_err(what)?;
    if npy.order() == npyz::Order::Fortran {
        return Err(format!(
            "{}: a Fortran-ordered array; save it C-ordered (np.ascontiguousarray)",
            path.display()
        ));
    }
    let npyz::DType::Plain(ts) = npy.dtype() else {
        return Err(format!(
            "{}: a structured array; tilewise reads plain numeric arrays",
            path.display()
        ));
    };
    let dtype = dtype_of(&ts).ok_or_else(|| {
        format!(
            "{}: NumPy dtype `{ts}` has no tilewise element type (floats f2/f4/f8, integers, bool)",
            path.display()
        )
    })?;
    macro_rules! vals {
        ($t:ty, $f:expr) => {
            npy.into_vec::<$t>()
                .map_err(what)?
                .into_iter()
                .map($f)
                .collect()
        };
    }
    let values: Vec<f64> = match dtype {
        DType::F16 => vals!(f16, |x| x.to_f64()),
        DType::F32 => vals!(f32, |x| x as f64),
        DType::F64 => vals!(f64, |x| x),
        DType::I8 => vals!(i8, |x| x as f64),
        DType::I16 => vals!(i16, |x| x as f64),
        DType::I32 => vals!(i32, |x| x as f64),
        DType::I64 => vals!(i64, |x| x as f64),
        DType::U8 => vals!(u8, |x| x as f64),
        DType::U16 => vals!(u16, |x| x as f64),
        DType::U32 => vals!(u32, |x| x as f64),
        DType::U64 => vals!(u64, |x| x as f64),
        DType::I1 => vals!(bool, |x| x as u8 as f64),
        _ => unreachable!("dtype_of gives only the types above"),
    };
    Ok((dtype, values))
}

/// Writes `values` (a buffer of `dtype`) to `path` as a 1-d array of the matching
/// NumPy type; bf16 and fp8 buffers as f32 (returns a note saying so).
pub fn write(path: &Path, dtype: DType, values: &[f64]) -> Result<Option<String>, String> {
    let what = |e: std::io::Error| format!("{}: {e}", path.display());
    macro_rules! out {
        ($t:ty, $f:expr) => {
            npyz::to_file_1d(path, values.iter().map($f).collect::<Vec<$t>>()).map_err(what)?
        };
    }
    let mut note = None;
    match dtype {
        DType::F16 => out!(f16, |&x| f16::from_f64(x)),
        DType::F32 => out!(f32, |&x| x as f32),
        DType::F64 => out!(f64, |&x| x),
        DType::I8 => out!(i8, |&x| x as i8),
        DType::I16 => out!(i16, |&x| x as i16),
        DType::I32 => out!(i32, |&x| x as i32),
        DType::I64 => out!(i64, |&x| x as i64),
        DType::U8 => out!(u8, |&x| x as u8),
        DType::U16 => out!(u16, |&x| x as u16),
        DType::U32 => out!(u32, |&x| x as u32),
        DType::U64 => out!(u64, |&x| x as u64),
        DType::I1 => out!(bool, |&x| x != 0.0),
        DType::BF16 | DType::F8E4M3 | DType::F8E5M2 => {
            out!(f32, |&x| x as f32);
            note = Some(format!(
                "{}: a {dtype} buffer written as f32 (NumPy has no {dtype})",
                path.display()
            ));
        }
    }
    Ok(note)
}

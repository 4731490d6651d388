//! `--grid`: one to three comma-separated integer expressions over the kernel's scalar
//! arguments and constexprs, as a Triton launch's grid lambda writes them:
//! `4`, `16,16`, `cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)`,
//! `triton.cdiv(n, META['BLOCK'])`. Operators `+ - * // / %` (integer division rounds
//! down, as Python's `//`), parentheses, unary minus, and the functions `cdiv`, `min`,
//! `max` (also spelled `triton.cdiv`). With autotuning the expressions are evaluated
//! for each configuration, so they may name the block sizes the configurations set.

use std::collections::HashMap;

/// A parsed `--grid`.
#[derive(Clone, Debug, PartialEq)]
pub struct GridExpr {
    dims: Vec<Expr>,
    text: String,
}

#[derive(Clone, Debug, PartialEq)]
enum Expr {
    Int(i64),
    Name(String),
    Neg(Box<Expr>),
    Bin(char, Box<Expr>, Box<Expr>),
    Call(String, Vec<Expr>),
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Int(i64),
    Name(String),
    Str(String),
    Op(char),
    FloorDiv,
}

fn lex(text: &str) -> Result<Vec<Tok>, String> {
    let mut out = vec![];
    let cs: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < cs.len() && (cs[i].is_ascii_digit() || cs[i] == '_') {
                i += 1;
            }
            let s: String = cs[start..i].iter().filter(|c| **c != '_').collect();
            out.push(Tok::Int(
                s.parse().map_err(|_| format!("`{s}` is too large"))?,
            ));
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < cs.len() && (cs[i].is_alphanumeric() || cs[i] == '_' || cs[i] == '.') {
                i += 1;
            }
            out.push(Tok::Name(cs[start..i].iter().collect()));
        } else if c == '\'' || c == '"' {
            let end = cs[i + 1..]
                .iter()
                .position(|&d| d == c)
                .ok_or("an unterminated string")?;
            out.push(Tok::Str(cs[i + 1..i + 1 + end].iter().collect()));
            i += end + 2;
        } else if c == '/' && cs.get(i + 1) == Some(&'/') {
            out.push(Tok::FloorDiv);
            i += 2;
        } else if "+-*/%(),[]".contains(c) {
            out.push(Tok::Op(c));
            i += 1;
        } else {
            return Err(format!("unexpected `{c}`"));
        }
    }
    Ok(out)
}

struct Parser {
    toks: Vec<Tok>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at)
    }
    fn eat(&mut self, t: &Tok) -> bool {
        if self.peek() == Some(t) {
            self.at += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, c: char) -> Result<(), String> {
        if self.eat(&Tok::Op(c)) {
            Ok(())
        } else {
            Err(format!("expected `{c}`"))
        }
    }
    fn expr(&mut self) -> Result<Expr, String> {
        let mut e = self.term()?;
        loop {
            let op = match self.peek() {
                Some(Tok::Op(c @ ('+' | '-'))) => *c,
                _ => return Ok(e),
            };
            self.at += 1;
            e = Expr::Bin(op, Box::new(e), Box::new(self.term()?));
        }
    }
    fn term(&mut self) -> Result<Expr, String> {
        let mut e = self.factor()?;
        loop {
            let op = match self.peek() {
                Some(Tok::Op(c @ ('*' | '/' | '%'))) => *c,
                Some(Tok::FloorDiv) => '/',
                _ => return Ok(e),
            };
            self.at += 1;
            e = Expr::Bin(op, Box::new(e), Box::new(self.factor()?));
        }
    }
    fn factor(&mut self) -> Result<Expr, String> {
        match self.toks.get(self.at).cloned() {
            Some(Tok::Int(v)) => {
                self.at += 1;
                Ok(Expr::Int(v))
            }
            Some(Tok::Op('-')) => {
                self.at += 1;
                Ok(Expr::Neg(Box::new(self.factor()?)))
            }
            Some(Tok::Op('(')) => {
                self.at += 1;
                let e = self.expr()?;
                self.expect(')')?;
                Ok(e)
            }
            Some(Tok::Name(n)) => {
                self.at += 1;
                if self.eat(&Tok::Op('(')) {
                    let mut args = vec![];
                    if !self.eat(&Tok::Op(')')) {
                        loop {
                            args.push(self.expr()?);
                            if self.eat(&Tok::Op(')')) {
                                break;
                            }
                            self.expect(',')?;
                        }
                    }
                    let f = n.strip_prefix("triton.").unwrap_or(&n).to_string();
                    return Ok(Expr::Call(f, args));
                }
                if self.eat(&Tok::Op('[')) {
                    // META['NAME'] (a Triton grid lambda's parameter) names NAME.
                    let Some(Tok::Str(key)) = self.toks.get(self.at).cloned() else {
                        return Err(format!("`{n}[...]` takes a quoted name"));
                    };
                    self.at += 1;
                    self.expect(']')?;
                    return Ok(Expr::Name(key));
                }
                Ok(Expr::Name(n))
            }
            Some(t) => Err(format!("unexpected {t:?}")),
            None => Err("an expression ends early".into()),
        }
    }
}

impl GridExpr {
    pub fn parse(text: &str) -> Result<GridExpr, String> {
        let bad = |why: String| format!("--grid `{text}`: {why}");
        let toks = lex(text).map_err(bad)?;
        let mut p = Parser { toks, at: 0 };
        let mut dims = vec![p.expr().map_err(bad)?];
        while p.eat(&Tok::Op(',')) {
            dims.push(p.expr().map_err(bad)?);
        }
        if p.at != p.toks.len() {
            return Err(bad(format!("unexpected {:?}", p.toks[p.at])));
        }
        if dims.len() > 3 {
            return Err(bad("one to three dimensions".into()));
        }
        Ok(GridExpr {
            dims,
            text: text.to_string(),
        })
    }

    /// The grid for the values of `names`.
    pub fn eval(&self, names: &HashMap<String, i64>) -> Result<(u32, u32, u32), String> {
        let mut out = [1u32; 3];
        for (d, e) in self.dims.iter().enumerate() {
            let v = eval(e, names).map_err(|why| format!("--grid `{}`: {why}", self.text))?;
            out[d] = u32::try_from(v).map_err(|_| {
                format!(
                    "--grid `{}`: dimension {d} is {v}, not a count of programs",
                    self.text
                )
            })?;
        }
        Ok((out[0], out[1], out[2]))
    }
}

fn eval(e: &Expr, names: &HashMap<String, i64>) -> Result<i64, String> {
    let overflow = || "the value overflows".to_string();
    Ok(match e {
        Expr::Int(v) => *v,
        Expr::Name(n) => *names.get(n).ok_or_else(|| {
            let mut known: Vec<&String> = names.keys().collect();
            known.sort();
            format!(
                "`{n}` is not an integer argument or constexpr (known: {})",
                known
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?,
        Expr::Neg(x) => eval(x, names)?.checked_neg().ok_or_else(overflow)?,
        Expr::Bin(op, a, b) => {
            let (a, b) = (eval(a, names)?, eval(b, names)?);
            if matches!(op, '/' | '%') && b == 0 {
                return Err("division by zero".into());
            }
            match op {
                '+' => a.checked_add(b),
                '-' => a.checked_sub(b),
                '*' => a.checked_mul(b),
                '/' => Some(a.div_euclid(b) - i64::from(a.rem_euclid(b) != 0 && b < 0)),
                _ => Some(a - b * (a.div_euclid(b) - i64::from(a.rem_euclid(b) != 0 && b < 0))),
            }
            .ok_or_else(overflow)?
        }
        Expr::Call(f, args) => {
            let vals: Vec<i64> = args
                .iter()
                .map(|a| eval(a, names))
                .collect::<Result<_, _>>()?;
            match (f.as_str(), vals.as_slice()) {
                ("cdiv", [a, b]) if *b != 0 => {
                    let q = a.div_euclid(*b);
                    if a.rem_euclid(*b) != 0 && *b > 0 {
                        q + 1
                    } else {
                        q
                    }
                }
                ("cdiv", [_, _]) => return Err("cdiv by zero".into()),
                ("min", [_, ..]) => *vals.iter().min().expect("one value"),
                ("max", [_, ..]) => *vals.iter().max().expect("one value"),
                _ => {
                    return Err(format!(
                        "unknown function `{f}` with {} arguments (cdiv(a, b), min, max)",
                        vals.len()
                    ))
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(pairs: &[(&str, i64)]) -> HashMap<String, i64> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn grids_evaluate_as_python_does() {
        let n = names(&[("M", 1000), ("N", 513), ("BLOCK_M", 64), ("BLOCK_N", 128)]);
        let g = |t: &str| GridExpr::parse(t).and_then(|g| g.eval(&n));
        assert_eq!(g("4"), Ok((4, 1, 1)));
        assert_eq!(g("4, 2"), Ok((4, 2, 1)));
        assert_eq!(g("4,2,3"), Ok((4, 2, 3)));
        assert_eq!(
            g("cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)"),
            Ok((16 * 5, 1, 1))
        );
        assert_eq!(
            g("triton.cdiv(M, META['BLOCK_M']), cdiv(N, META[\"BLOCK_N\"])"),
            Ok((16, 5, 1))
        );
        assert_eq!(g("(M + BLOCK_M - 1) // BLOCK_M"), Ok((16, 1, 1)));
        assert_eq!(
            g("M % 7 + max(1, 2, 3) - min(4, 5)"),
            Ok((1000 % 7 + 3 - 4, 1, 1))
        );
        assert_eq!(g("-(-M // BLOCK_M)"), Ok((16, 1, 1)));
        for bad in [
            "", "4,", "4,,2", "cdiv(M)", "M // 0", "K", "1,2,3,4", "-1", "4 4", "f(2)",
        ] {
            assert!(g(bad).is_err(), "{bad}: {:?}", g(bad));
        }
        assert!(g("K")
            .unwrap_err()
            .contains("known: BLOCK_M, BLOCK_N, M, N"));
    }
}

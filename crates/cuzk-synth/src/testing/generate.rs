//! Drawing a random circuit: its operations, and the values that satisfy it.

use super::{ConstraintInfo, Op, RandomCircuit, Term, Var};
use cuzk_field::Scalar;
use ff::Field;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

/// Values of the variables of one scope (the top level or a segment).
#[derive(Default)]
struct Scope {
    inputs: Vec<Scalar>,
    aux: Vec<Scalar>,
}

impl Scope {
    fn new() -> Scope {
        Scope {
            inputs: vec![Scalar::ONE],
            aux: Vec::new(),
        }
    }

    fn value(&self, v: Var) -> Scalar {
        match v {
            Var::Input(i) => self.inputs[i],
            Var::Aux(j) => self.aux[j],
        }
    }

    fn eval(&self, terms: &[Term]) -> Scalar {
        terms.iter().fold(Scalar::ZERO, |acc, &(v, k, sub)| {
            let t = self.value(v) * k;
            if sub {
                acc - t
            } else {
                acc + t
            }
        })
    }
}

struct Generator {
    rng: ChaCha8Rng,
    circuit: RandomCircuit,
    next_name: usize,
}

impl Generator {
    fn below(&mut self, n: u32) -> u32 {
        self.rng.next_u32() % n
    }

    fn value(&mut self) -> Scalar {
        match self.below(4) {
            0 => Scalar::ZERO,
            1 => Scalar::ONE,
            _ => Scalar::random(&mut self.rng),
        }
    }

    fn values(&mut self, max: u32) -> Vec<Scalar> {
        (0..self.below(max + 1)).map(|_| self.value()).collect()
    }

    fn coeff(&mut self) -> Scalar {
        match self.below(10) {
            0 => Scalar::ZERO,
            1..=3 => Scalar::ONE,
            4 => -Scalar::ONE,
            5 => Scalar::from(2),
            _ => Scalar::random(&mut self.rng),
        }
    }

    fn var(&mut self, scope: &Scope) -> Var {
        let pick_input = scope.aux.is_empty() || self.below(4) == 0;
        if pick_input {
            Var::Input(self.below(scope.inputs.len() as u32) as usize)
        } else {
            Var::Aux(self.below(scope.aux.len() as u32) as usize)
        }
    }

    fn terms(&mut self, scope: &Scope) -> Vec<Term> {
        let mut terms: Vec<Term> = Vec::new();
        for _ in 0..self.below(5) {
            let v = match terms.last() {
                Some(&(prev, _, _)) if self.below(6) == 0 => prev,
                _ if self.below(8) == 0 => Var::Input(0),
                _ => self.var(scope),
            };
            let (k, sub) = (self.coeff(), self.below(3) == 0);
            terms.push((v, k, sub));
        }
        terms
    }

    fn zero_terms(&mut self, scope: &Scope) -> Vec<Term> {
        (0..self.below(3))
            .map(|_| (self.var(scope), Scalar::ZERO, self.below(2) == 0))
            .collect()
    }

    fn alloc(&mut self, ops: &mut Vec<Op>, scope: &mut Scope, v: Scalar) -> usize {
        self.circuit.values.push(v);
        self.circuit.num_aux += 1;
        ops.push(Op::Alloc(self.circuit.values.len() - 1));
        scope.aux.push(v);
        self.circuit.values.len() - 1
    }

    fn inputs(&mut self, scope: &mut Scope, vals: &[Scalar]) {
        scope.inputs.extend_from_slice(vals);
        self.circuit.public_inputs.extend_from_slice(vals);
    }

    fn aux(&mut self, scope: &mut Scope, vals: &[Scalar]) {
        scope.aux.extend_from_slice(vals);
        self.circuit.num_aux += vals.len();
    }

    fn enforce(&mut self, ops: &mut Vec<Op>, scope: &mut Scope, path: &str) {
        let name = format!("c{}", self.next_name);
        self.next_name += 1;
        let full = if path.is_empty() {
            name.clone()
        } else {
            format!("{path}/{name}")
        };
        let (a, b, c, solver) = if self.below(7) == 0 {
            // 0·b = 0, with A and C empty or all-zero.
            (
                self.zero_terms(scope),
                self.terms(scope),
                self.zero_terms(scope),
                None,
            )
        } else {
            let (a, b, mut c) = (self.terms(scope), self.terms(scope), self.terms(scope));
            let k = if self.below(2) == 0 {
                Scalar::ONE
            } else {
                self.coeff_nonzero()
            };
            let sub = self.below(4) == 0;
            let rest = scope.eval(&a) * scope.eval(&b) - scope.eval(&c);
            let z = rest * k.invert().expect("nonzero");
            let z = if sub { -z } else { z };
            let slot = self.alloc(ops, scope, z);
            c.push((Var::Aux(scope.aux.len() - 1), k, sub));
            (a, b, c, Some(slot))
        };
        debug_assert_eq!(scope.eval(&a) * scope.eval(&b), scope.eval(&c));
        self.circuit
            .constraints
            .push(ConstraintInfo { name: full, solver });
        ops.push(Op::Enforce { name, a, b, c });
    }

    fn coeff_nonzero(&mut self) -> Scalar {
        loop {
            let k = self.coeff();
            if k != Scalar::ZERO {
                return k;
            }
        }
    }

    fn ops(&mut self, budget: &mut usize, depth: usize, path: &str, scope: &mut Scope) -> Vec<Op> {
        let mut ops = Vec::new();
        while *budget > 0 {
            *budget -= 1;
            match self.below(100) {
                0..=24 => {
                    let v = self.value();
                    self.alloc(&mut ops, scope, v);
                }
                25..=31 => {
                    let v = self.value();
                    self.inputs(scope, &[v]);
                    ops.push(Op::AllocInput(v));
                }
                32..=35 => {
                    let vals = self.values(4);
                    self.aux(scope, &vals);
                    ops.push(Op::ExtendAux(vals));
                }
                36..=37 => {
                    let vals = self.values(2);
                    self.inputs(scope, &vals);
                    ops.push(Op::ExtendInputs(vals));
                }
                38..=41 => {
                    let (aux, inputs) = (self.values(3), self.values(2));
                    self.aux(scope, &aux);
                    self.inputs(scope, &inputs);
                    ops.push(Op::AllocateEmpty { aux, inputs });
                }
                42..=45 if depth < 3 => {
                    let name = format!("ns{}", self.next_name);
                    self.next_name += 1;
                    let inner_path = if path.is_empty() {
                        name.clone()
                    } else {
                        format!("{path}/{name}")
                    };
                    let mut inner_budget = (*budget).min(1 + self.below(12) as usize);
                    *budget -= inner_budget;
                    let inner = self.ops(&mut inner_budget, depth + 1, &inner_path, scope);
                    ops.push(Op::Namespace(name, inner));
                }
                46..=48 if depth < 2 => {
                    let name = format!("segment{}", self.next_name);
                    self.next_name += 1;
                    let inner_path = if path.is_empty() {
                        name.clone()
                    } else {
                        format!("{path}/{name}")
                    };
                    let mut inner_budget = (*budget).min(1 + self.below(12) as usize);
                    *budget -= inner_budget;
                    let inner =
                        self.ops(&mut inner_budget, depth + 1, &inner_path, &mut Scope::new());
                    ops.push(Op::Segment(name, inner));
                }
                _ => self.enforce(&mut ops, scope, path),
            }
        }
        ops
    }
}

/// The circuit of about `size` operations drawn from `seed`.
pub(super) fn generate(seed: u64, size: usize) -> RandomCircuit {
    let mut g = Generator {
        rng: ChaCha8Rng::seed_from_u64(seed),
        circuit: RandomCircuit {
            ops: Vec::new(),
            values: Vec::new(),
            constraints: Vec::new(),
            public_inputs: Vec::new(),
            num_aux: 0,
        },
        next_name: 0,
    };
    let mut budget = size;
    let ops = g.ops(&mut budget, 0, "", &mut Scope::new());
    g.circuit.ops = ops;
    g.circuit
}

//! Synthesizing a random circuit's operations on any constraint system.

use super::{Op, Term, Var};
use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use cuzk_field::Scalar;
use ff::Field;

/// The closure that builds `terms` over the constraint system's variables.
fn lc(
    terms: &[Term],
    inputs: &[Variable],
    aux: &[Variable],
) -> impl FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar> {
    let terms: Vec<(Variable, Scalar, bool)> = terms
        .iter()
        .map(|&(v, k, sub)| {
            let var = match v {
                Var::Input(i) => inputs[i],
                Var::Aux(j) => aux[j],
            };
            (var, k, sub)
        })
        .collect();
    move |lc| {
        terms.into_iter().fold(
            lc,
            |lc, (var, k, sub)| if sub { lc - (k, var) } else { lc + (k, var) },
        )
    }
}

fn aux_var(j: usize) -> Variable {
    Variable::new_unchecked(Index::Aux(j))
}

fn input_var(i: usize) -> Variable {
    Variable::new_unchecked(Index::Input(i))
}

/// Synthesizes `ops`; `inputs` and `aux` hold the scope's variables as the CS numbered them.
pub(super) fn run<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    ops: &[Op],
    values: &[Scalar],
    inputs: &mut Vec<Variable>,
    aux: &mut Vec<Variable>,
) -> Result<(), SynthesisError> {
    for op in ops {
        match op {
            Op::Alloc(slot) => aux.push(cs.alloc(|| "alloc", || Ok(values[*slot]))?),
            Op::AllocInput(v) => inputs.push(cs.alloc_input(|| "input", || Ok(*v))?),
            Op::ExtendAux(vals) if cs.is_witness_generator() => {
                let base = cs.aux_slice().len();
                cs.extend_aux(vals);
                aux.extend((base..base + vals.len()).map(aux_var));
            }
            Op::ExtendInputs(vals) if cs.is_witness_generator() => {
                let base = cs.inputs_slice().len();
                cs.extend_inputs(vals);
                inputs.extend((base..base + vals.len()).map(input_var));
            }
            Op::AllocateEmpty {
                aux: av,
                inputs: iv,
            } if cs.is_witness_generator() => {
                let (aux_base, input_base) = (cs.aux_slice().len(), cs.inputs_slice().len());
                let (a, i) = cs.allocate_empty(av.len(), iv.len());
                a.copy_from_slice(av);
                i.copy_from_slice(iv);
                aux.extend((aux_base..aux_base + av.len()).map(aux_var));
                inputs.extend((input_base..input_base + iv.len()).map(input_var));
            }
            Op::ExtendAux(vals) => {
                for v in vals {
                    aux.push(cs.alloc(|| "bulk aux", || Ok(*v))?);
                }
            }
            Op::ExtendInputs(vals) => {
                for v in vals {
                    inputs.push(cs.alloc_input(|| "bulk input", || Ok(*v))?);
                }
            }
            Op::AllocateEmpty {
                aux: av,
                inputs: iv,
            } => {
                for v in av {
                    aux.push(cs.alloc(|| "empty aux", || Ok(*v))?);
                }
                for v in iv {
                    inputs.push(cs.alloc_input(|| "empty input", || Ok(*v))?);
                }
            }
            Op::Enforce { name, a, b, c } => {
                cs.enforce(
                    || name.as_str(),
                    lc(a, inputs, aux),
                    lc(b, inputs, aux),
                    lc(c, inputs, aux),
                );
            }
            Op::Namespace(name, inner) => {
                run(
                    &mut cs.namespace(|| name.as_str()),
                    inner,
                    values,
                    inputs,
                    aux,
                )?;
            }
            Op::Segment(name, inner) => {
                let (mut seg_inputs, mut seg_aux) = (vec![CS::one()], Vec::new());
                if CS::is_extensible() {
                    // bellperson's contract: a fresh system is empty and its first input is
                    // the sub-circuit's own ONE, which `extend` drops.
                    let mut sub = CS::new();
                    sub.alloc_input(|| "temp ONE", || Ok(Scalar::ONE))?;
                    run(&mut sub, inner, values, &mut seg_inputs, &mut seg_aux)?;
                    cs.extend(&sub);
                } else {
                    let mut ns = cs.namespace(|| name.as_str());
                    run(&mut ns, inner, values, &mut seg_inputs, &mut seg_aux)?;
                }
            }
        }
    }
    Ok(())
}

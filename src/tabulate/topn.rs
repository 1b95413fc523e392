//! `sdc_top<N>`: the N largest values of a group, as a descending list, mergeable.
//!
//! Dominance rules need the largest contributions of every cell, at every level of every
//! hierarchy. DataFusion has no mergeable "top N" aggregate, so sdcflow registers its own. The
//! same function accepts plain values (`Float64`) and lists it produced earlier, so the N largest
//! of a marginal can be rolled up from the lists of its parts without revisiting the
//! contributions. The result does not depend on the order rows arrive in (ties are equal values),
//! which keeps outputs byte-identical across partitionings. Executors must have it registered:
//! [`register_functions`](crate::engine) does that for every session.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Float64Array, Float64Builder, ListBuilder};
use arrow::datatypes::{DataType, Field, FieldRef, Float64Type};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator, Signature, Volatility,
};

/// Largest N supported (NK(n,k) needs n, P(p,n) needs n + 1).
pub const MAX_TOP: usize = 8;

/// The `sdc_top<N>` aggregate.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct TopN {
    n: usize,
    name: String,
    signature: Signature,
}

impl TopN {
    /// The aggregate keeping the `n` largest values (`2 ≤ n ≤ MAX_TOP`).
    pub fn new(n: usize) -> Self {
        assert!((1..=MAX_TOP).contains(&n), "top-n size out of range");
        Self { n, name: Self::name_for(n), signature: Signature::any(1, Volatility::Immutable) }
    }

    /// SQL name of the aggregate keeping `n` values.
    pub fn name_for(n: usize) -> String {
        format!("sdc_top{n}")
    }

    /// All variants, for registration.
    pub fn all() -> Vec<Arc<AggregateUDF>> {
        (1..=MAX_TOP).map(|n| Arc::new(AggregateUDF::from(TopN::new(n)))).collect()
    }
}

fn list_type() -> DataType {
    DataType::List(Arc::new(Field::new_list_field(DataType::Float64, true)))
}

impl AggregateUDFImpl for TopN {
    fn name(&self) -> &str {
        &self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(list_type())
    }
    fn accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(TopAccumulator(TopGroups::new(self.n))))
    }
    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(format!("{}_top", args.name), list_type(), true))])
    }
    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }
    fn create_groups_accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(TopGroups::new(self.n)))
    }
}

/// Top-N state of many groups: `n` slots per group, filled from the front in descending order.
#[derive(Debug)]
struct TopGroups {
    n: usize,
    vals: Vec<f64>,
    lens: Vec<u8>,
}

impl TopGroups {
    fn new(n: usize) -> Self {
        Self { n, vals: Vec::new(), lens: Vec::new() }
    }

    fn ensure(&mut self, groups: usize) {
        if self.lens.len() < groups {
            self.lens.resize(groups, 0);
            self.vals.resize(groups * self.n, 0.0);
        }
    }

    #[inline]
    fn insert(&mut self, g: usize, x: f64) {
        if x.is_nan() {
            return;
        }
        let n = self.n;
        let slots = &mut self.vals[g * n..(g + 1) * n];
        let len = self.lens[g] as usize;
        if len == n && x <= slots[n - 1] {
            return;
        }
        let mut pos = len.min(n - 1);
        while pos > 0 && slots[pos - 1] < x {
            if pos < n {
                slots[pos] = slots[pos - 1];
            }
            pos -= 1;
        }
        slots[pos] = x;
        if len < n {
            self.lens[g] += 1;
        }
    }

    fn add(
        &mut self,
        values: &ArrayRef,
        group_of: impl Fn(usize) -> usize,
        keep: impl Fn(usize) -> bool,
    ) -> Result<()> {
        match values.data_type() {
            DataType::List(_) => {
                let list = values.as_list::<i32>();
                for row in 0..list.len() {
                    if list.is_null(row) || !keep(row) {
                        continue;
                    }
                    let inner = list.value(row);
                    let inner = inner.as_primitive::<Float64Type>();
                    let g = group_of(row);
                    for v in inner.iter().flatten() {
                        self.insert(g, v);
                    }
                }
            }
            DataType::Float64 => {
                let arr = values.as_primitive::<Float64Type>();
                for (row, v) in arr.iter().enumerate() {
                    if let (Some(v), true) = (v, keep(row)) {
                        self.insert(group_of(row), v);
                    }
                }
            }
            _ => {
                let cast = arrow::compute::cast(values, &DataType::Float64)?;
                return self.add(&cast, group_of, keep);
            }
        }
        Ok(())
    }

    fn emit(&mut self, emit_to: EmitTo) -> ArrayRef {
        let k = match emit_to {
            EmitTo::All => self.lens.len(),
            EmitTo::First(k) => k,
        };
        let mut b = ListBuilder::new(Float64Builder::with_capacity(k * self.n))
            .with_field(Arc::new(Field::new_list_field(DataType::Float64, true)));
        for g in 0..k {
            let len = self.lens[g] as usize;
            b.values().append_slice(&self.vals[g * self.n..g * self.n + len]);
            b.append(true);
        }
        self.lens.drain(..k);
        self.vals.drain(..k * self.n);
        Arc::new(b.finish())
    }
}

impl GroupsAccumulator for TopGroups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.ensure(total_num_groups);
        self.add(&values[0], |r| group_indices[r], |r| opt_filter.is_none_or(|f| f.is_valid(r) && f.value(r)))
    }
    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        Ok(self.emit(emit_to))
    }
    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        Ok(vec![self.emit(emit_to)])
    }
    fn merge_batch(&mut self, values: &[ArrayRef], group_indices: &[usize], total_num_groups: usize) -> Result<()> {
        self.ensure(total_num_groups);
        self.add(&values[0], |r| group_indices[r], |_| true)
    }
    fn convert_to_state(&self, values: &[ArrayRef], opt_filter: Option<&BooleanArray>) -> Result<Vec<ArrayRef>> {
        // One group per row: the row's own top-N (a one-element list, or its list).
        let mut single = TopGroups::new(self.n);
        single.ensure(values[0].len());
        single.add(&values[0], |r| r, |r| opt_filter.is_none_or(|f| f.is_valid(r) && f.value(r)))?;
        Ok(vec![single.emit(EmitTo::All)])
    }
    fn size(&self) -> usize {
        self.vals.capacity() * 8 + self.lens.capacity() + std::mem::size_of::<Self>()
    }
}

/// Single-group form (used by DataFusion for aggregates without GROUP BY).
#[derive(Debug)]
struct TopAccumulator(TopGroups);

impl Accumulator for TopAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.0.ensure(1);
        self.0.add(&values[0], |_| 0, |_| true)
    }
    fn evaluate(&mut self) -> Result<ScalarValue> {
        self.0.ensure(1);
        let len = self.0.lens[0] as usize;
        let arr = Float64Array::from(self.0.vals[..len].to_vec());
        Ok(ScalarValue::List(Arc::new(
            datafusion::common::utils::SingleRowListArrayBuilder::new(Arc::new(arr)).build_list_array(),
        )))
    }
    fn size(&self) -> usize {
        self.0.size()
    }
    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![self.evaluate()?])
    }
    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.update_batch(states)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_largest_in_order_and_merges() {
        let mut t = TopGroups::new(3);
        t.ensure(2);
        for (g, v) in [(0, 5.0), (0, 1.0), (1, 2.0), (0, 9.0), (0, 7.0), (0, 3.0), (1, 2.0)] {
            t.insert(g, v);
        }
        let out = t.emit(EmitTo::All);
        let l = out.as_list::<i32>();
        let g0: Vec<f64> = l.value(0).as_primitive::<Float64Type>().values().to_vec();
        assert_eq!(g0, vec![9.0, 7.0, 5.0]);
        let g1: Vec<f64> = l.value(1).as_primitive::<Float64Type>().values().to_vec();
        assert_eq!(g1, vec![2.0, 2.0]);
        // merging lists gives the same as inserting all values
        let mut m = TopGroups::new(3);
        m.ensure(1);
        m.add(&out, |_| 0, |_| true).unwrap();
        let merged = m.emit(EmitTo::All);
        let v: Vec<f64> = merged.as_list::<i32>().value(0).as_primitive::<Float64Type>().values().to_vec();
        assert_eq!(v, vec![9.0, 7.0, 5.0]);
    }
}

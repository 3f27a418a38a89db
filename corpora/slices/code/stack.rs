/// A bounded stack that refuses to grow past its capacity.
#[derive(Debug)]
pub struct Stack<T> {
    items: Vec<T>,
    capacity: usize,
}

impl<T> Stack<T> {
    pub fn new(capacity: usize) -> Self {
        Stack { items: Vec::with_capacity(capacity), capacity }
    }

    pub fn push(&mut self, item: T) -> Result<(), T> {
        if self.items.len() == self.capacity {
            return Err(item);
        }
        self.items.push(item);
        Ok(())
    }

    pub fn pop(&mut self) -> Option<T> {
        self.items.pop()
    }
}

fn main() {
    let mut stack = Stack::new(2);
    for word in ["loom", "thread", "needle"] {
        match stack.push(word) {
            Ok(()) => println!("pushed {word}"),
            Err(rejected) => println!("full, rejected {rejected}"),
        }
    }
    while let Some(top) = stack.pop() {
        println!("popped {top}");
    }
}

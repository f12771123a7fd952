// placeholder, replaced below
console.log('provision: pending');
